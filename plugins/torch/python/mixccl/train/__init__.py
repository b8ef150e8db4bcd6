"""mixccl.train: mixccl-plan's non-uniform plans executed on PyTorch models over the mixccl
backend (docs/training.md, "mixccl.train"). `python -m mixccl.train --help` for the command."""
from .model import build_llama_parts
from .parts import ModelParts, restrict_parts, user_model_parts
from .plan import load_plan, one_f_one_b_order, rank_of, role_of_rank
from .spec import InputError, ModelSpec, load_model_spec

__all__ = ["ModelParts", "user_model_parts", "restrict_parts", "build_llama_parts",
           "load_plan", "role_of_rank", "rank_of", "one_f_one_b_order", "ModelSpec",
           "load_model_spec", "InputError"]
