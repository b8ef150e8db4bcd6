"""mixccl-train's GPT as mixccl.train parts, with the weights a mixccl-train run started from.

`--model-module tests/train_torch/trainer_gpt_parts.py:build_parts` with the environment
variable MIXCCL_CROSSCHECK_STATE naming a `mixccl-train --debug-state` directory: the model is
train/tests/torch_gpt.py's Gpt (the PyTorch equal of train/src/gpt_model.cc), loaded from that
directory's start.ckpt (checked against its meta.json tensor table by torch_crosscheck.py), cut
into mixccl.train's three parts: embedding (token + position), the blocks, head (final
layernorm and the untied head). crosscheck_cpp.py uses it to train the same weights in both
trainers; an environment variable, because the model spec has no field for a weights file.
"""
import json
import os
import sys

import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "train", "tests"))
from torch_crosscheck import build_model, read_checkpoint  # noqa: E402

from mixccl.train import restrict_parts, user_model_parts  # noqa: E402
from mixccl.train.spec import InputError  # noqa: E402

STATE_VARIABLE = "MIXCCL_CROSSCHECK_STATE"


class GptEmbedding(nn.Module):
    """Token plus learned position embedding (B, T) -> (B, T, C)."""

    def __init__(self, wte, wpe):
        super().__init__()
        self.wte = wte
        self.wpe = wpe

    def forward(self, tokens):
        return self.wte(tokens) + self.wpe(torch.arange(tokens.shape[1], device=tokens.device))


class GptHead(nn.Module):
    """Final layernorm and the untied head (B, T, C) -> logits (B, T, V)."""

    def __init__(self, lnf, head):
        super().__init__()
        self.lnf = lnf
        self.head = head

    def forward(self, x):
        return self.head(self.lnf(x))


def spec_mismatch(spec, ck):
    """The first model-spec field that differs from the checkpoint's config, as a message."""
    pairs = (("num_layers", spec.num_layers, ck["num_layers"]),
             ("hidden_size", spec.hidden_size, ck["channels"]),
             ("ffn_hidden_size", spec.ffn_hidden_size, 4 * ck["channels"]),
             ("num_attention_heads", spec.num_attention_heads, ck["num_heads"]),
             ("vocab_size", spec.vocab_size, ck["vocab_size"]),
             ("seq_length", spec.seq_length, ck["seq_len"]))
    for name, got, want in pairs:
        if got != want:
            return f"the model spec's {name} is {got}, the checkpoint's model has {want}"
    return None


def build_parts(spec, seed, first_layer, last_layer, embedding, head):
    """The parts of this stage; `seed` is unused: the weights are the checkpoint's."""
    state = os.environ.get(STATE_VARIABLE)
    if not state:
        raise InputError(f"trainer_gpt_parts: set {STATE_VARIABLE} to a mixccl-train "
                         "--debug-state directory")
    ck = read_checkpoint(os.path.join(state, "start.ckpt"))
    with open(os.path.join(state, "meta.json")) as f:
        meta = json.load(f)
    bad = spec_mismatch(spec, ck)
    if bad:
        raise InputError(f"trainer_gpt_parts: {state}/start.ckpt: {bad}")
    model, _ = build_model(ck, meta, torch.float32)
    parts = user_model_parts(GptEmbedding(model.wte, model.wpe), list(model.blocks),
                             GptHead(model.lnf, model.head))
    return restrict_parts(parts, first_layer, last_layer, embedding, head)
