"""The planner's model spec (train/examples/models/*.json, docs/planner.md), read the way
mixccl-plan reads it, so that the plan and the model that runs it describe the same network."""
import json
from dataclasses import dataclass


class InputError(Exception):
    """Input refused before training: the message names the file, the field and the rank."""


_FIELDS = {"comment", "name", "num_layers", "hidden_size", "ffn_hidden_size",
           "num_attention_heads", "num_kv_heads", "vocab_size", "seq_length",
           "global_batch_size", "param_dtype", "grad_dtype", "optimizer", "gated_mlp",
           "flash_attention", "tie_embeddings"}


@dataclass
class ModelSpec:
    name: str
    num_layers: int
    hidden_size: int
    ffn_hidden_size: int
    num_attention_heads: int
    num_kv_heads: int
    vocab_size: int
    seq_length: int
    global_batch_size: int
    param_dtype: str = "bf16"
    gated_mlp: bool = True
    tie_embeddings: bool = False

    @property
    def head_dim(self):
        return self.hidden_size // self.num_attention_heads


def parse_model_spec(obj, origin):
    where = "model spec " + origin
    if not isinstance(obj, dict):
        raise InputError(f"{where}: a model spec is a JSON object")
    unknown = sorted(set(obj) - _FIELDS)
    if unknown:
        raise InputError(f"{where}: unknown field '{unknown[0]}'")

    def integer(name, default=None):
        if name not in obj:
            if default is not None:
                return default
            raise InputError(f"{where}: missing field '{name}'")
        v = obj[name]
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise InputError(f"{where}: '{name}' must be a positive integer, got {json.dumps(v)}")
        return v

    def boolean(name, default):
        v = obj.get(name, default)
        if not isinstance(v, bool):
            raise InputError(f"{where}: '{name}' must be true or false, got {json.dumps(v)}")
        return v

    layers, hidden, ffn = integer("num_layers"), integer("hidden_size"), integer("ffn_hidden_size")
    heads = integer("num_attention_heads")
    spec = ModelSpec(
        name=obj.get("name", origin), num_layers=layers, hidden_size=hidden,
        ffn_hidden_size=ffn, num_attention_heads=heads, num_kv_heads=integer("num_kv_heads", heads),
        vocab_size=integer("vocab_size"), seq_length=integer("seq_length"),
        global_batch_size=integer("global_batch_size"),
        param_dtype=obj.get("param_dtype", "bf16"), gated_mlp=boolean("gated_mlp", True),
        tie_embeddings=boolean("tie_embeddings", False))
    if spec.param_dtype not in ("bf16", "fp16", "fp32"):
        raise InputError(f"{where}: 'param_dtype' must be \"bf16\", \"fp16\" or \"fp32\", "
                         f"got {json.dumps(spec.param_dtype)}")
    if spec.hidden_size % heads:
        raise InputError(f"{where}: 'hidden_size' {spec.hidden_size} is not a multiple of "
                         f"'num_attention_heads' {heads}")
    if heads % spec.num_kv_heads:
        raise InputError(f"{where}: 'num_kv_heads' {spec.num_kv_heads} does not divide "
                         f"'num_attention_heads' {heads}")
    if spec.head_dim % 2:
        raise InputError(f"{where}: the head dimension {spec.head_dim} must be even (rotary "
                         "positions rotate pairs)")
    return spec


def load_json(path, what):
    try:
        with open(path) as f:
            return json.load(f)
    except OSError as e:
        raise InputError(f"{path}: cannot read the {what}: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise InputError(f"{path}: the {what} is not valid JSON: {e}") from None


def load_model_spec(path):
    return parse_model_spec(load_json(path, "model spec"), path)
