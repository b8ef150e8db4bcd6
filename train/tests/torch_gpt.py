"""The trainer's model (train/src/gpt_model.cc) in PyTorch.

Token + position embedding, L blocks of (layernorm, causal self-attention, residual,
layernorm, 4C MLP with tanh GELU, residual), final layernorm, untied head without bias,
mean cross-entropy. Written independently of the C++ code from docs/training.md ("The
model"); train/tests/torch_crosscheck.py checks the trainer against it and
train/bench/torch_gpt_speed.py times it.

`Gpt.parameters()` lists the tensors in the trainer's flat order (wte, wpe, then per block
ln1, qkv, proj, ln2, fc, fcproj weight and bias, then lnf and head), with the trainer's
shapes: a checkpoint's parameter array maps onto it in order.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, C, NH, T):
        super().__init__()
        self.NH = NH
        self.ln1 = nn.LayerNorm(C)
        self.qkv = nn.Linear(C, 3 * C)
        self.proj = nn.Linear(C, C)
        self.ln2 = nn.LayerNorm(C)
        self.fc = nn.Linear(C, 4 * C)
        self.fcproj = nn.Linear(4 * C, C)
        self.register_buffer("mask", torch.tril(torch.ones(T, T, dtype=torch.bool)))

    def attention(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        hs = C // self.NH
        q, k, v = (t.view(B, T, self.NH, hs).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(hs)  # explicit, as the trainer does
        att = att.masked_fill(~self.mask[:T, :T], float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        return self.proj(y)

    def forward(self, x):
        x = x + self.attention(self.ln1(x))
        return x + self.fcproj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class Gpt(nn.Module):
    def __init__(self, V, T, C, NH, L):
        super().__init__()
        self.wte = nn.Embedding(V, C)
        self.wpe = nn.Embedding(T, C)
        self.blocks = nn.ModuleList(Block(C, NH, T) for _ in range(L))
        self.lnf = nn.LayerNorm(C)
        self.head = nn.Linear(C, V, bias=False)

    def forward(self, tokens, targets):
        """Returns the logits (B, T, V) and the mean loss over the B*T tokens."""
        T = tokens.shape[1]
        x = self.wte(tokens) + self.wpe(torch.arange(T))
        for b in self.blocks:
            x = b(x)
        logits = self.head(self.lnf(x))
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
        return logits, loss


def decays(model):
    """Per parameter, whether AdamW's weight decay applies: matrices and embeddings."""
    return [p.dim() >= 2 for p in model.parameters()]


def adamw(model, lr, betas, eps, weight_decay):
    """torch's AdamW with the trainer's two groups (decay on matrices and embeddings only)."""
    params = list(model.parameters())
    flags = decays(model)
    return torch.optim.AdamW(
        [{"params": [p for p, d in zip(params, flags) if d], "weight_decay": weight_decay},
         {"params": [p for p, d in zip(params, flags) if not d], "weight_decay": 0.0}],
        lr=lr, betas=betas, eps=eps)
