"""A LLaMA-style decoder built from the planner's model spec, in the three parts a pipeline
stage is cut from: the embedding, the blocks (RMSNorm, rotary grouped-query attention, SwiGLU
or plain MLP) and the head (final RMSNorm and the output projection, tied to the embedding or
not). A stage builds only its own parts; every parameter is initialised from its own generator
seeded by (seed, its name in the whole model), so a stage starts with exactly the weights the
same layers have in the single-process model, whatever the split."""
import math
import zlib

import torch
import torch.nn as nn
import torch.nn.functional as F

from .parts import ModelParts


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        # In fp32 whatever the autocast dtype: the mean of squares loses too much in bf16.
        xf = x.float()
        y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return (y * self.weight).type_as(x)


def rotary_tables(seq_len, head_dim, base=10000.0):
    """cos and sin (seq_len, head_dim/2) of the rotary angles pos * base^(-2i/head_dim)."""
    inv = 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim))
    angles = torch.outer(torch.arange(seq_len, dtype=torch.float64), inv)
    return angles.cos().float(), angles.sin().float()


def apply_rotary(x, cos, sin):
    """x (B, heads, T, head_dim): rotates each pair (x[2i], x[2i+1]) by its position's angle."""
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)


class Attention(nn.Module):
    def __init__(self, spec):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = (spec.num_attention_heads, spec.num_kv_heads,
                                                    spec.head_dim)
        c = spec.hidden_size
        self.wq = nn.Linear(c, self.heads * self.head_dim, bias=False)
        self.wk = nn.Linear(c, self.kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(c, self.kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(self.heads * self.head_dim, c, bias=False)
        cos, sin = rotary_tables(spec.seq_length, self.head_dim)
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)

    def forward(self, x):  # x (B, T, C)
        b, t, _ = x.shape
        q = self.wq(x).view(b, t, self.heads, self.head_dim).transpose(1, 2)
        k = self.wk(x).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.wv(x).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
        cos, sin = self.cos[:t], self.sin[:t]
        q, k = apply_rotary(q, cos, sin), apply_rotary(k, cos, sin)
        if self.kv_heads != self.heads:  # grouped-query: each K/V head serves heads/kv_heads queries
            rep = self.heads // self.kv_heads
            k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # (B, H, T, hd)
        return self.wo(y.transpose(1, 2).reshape(b, t, self.heads * self.head_dim))


class MLP(nn.Module):
    def __init__(self, spec):
        super().__init__()
        c, f = spec.hidden_size, spec.ffn_hidden_size
        self.gated = spec.gated_mlp
        self.w1 = nn.Linear(c, f, bias=False)
        self.w3 = nn.Linear(c, f, bias=False) if self.gated else None
        self.w2 = nn.Linear(f, c, bias=False)

    def forward(self, x):
        if self.gated:  # SwiGLU: silu(x W1) * (x W3), then W2
            return self.w2(F.silu(self.w1(x)) * self.w3(x))
        return self.w2(F.gelu(self.w1(x)))


class Block(nn.Module):
    def __init__(self, spec):
        super().__init__()
        self.attn_norm = RMSNorm(spec.hidden_size)
        self.attn = Attention(spec)
        self.mlp_norm = RMSNorm(spec.hidden_size)
        self.mlp = MLP(spec)

    def forward(self, x):
        x = x + self.attn(self.attn_norm(x))
        return x + self.mlp(self.mlp_norm(x))


class Embedding(nn.Module):
    def __init__(self, spec):
        super().__init__()
        self.tok = nn.Embedding(spec.vocab_size, spec.hidden_size)

    def forward(self, tokens):
        return self.tok(tokens)


class Head(nn.Module):
    """Final norm and output projection. Tied: `weight_of` is the embedding's weight on a stage
    holding both, or a copy of its own on a last stage without the embedding (its gradient is
    then summed with the embedding's: grad_sync.py)."""

    def __init__(self, spec, tied_weight=None):
        super().__init__()
        self.norm = RMSNorm(spec.hidden_size)
        self.tied = spec.tie_embeddings
        if self.tied and tied_weight is not None:
            self.shared = [tied_weight]  # a list, so the module does not register it twice
        else:
            self.out = nn.Linear(spec.hidden_size, spec.vocab_size, bias=False)

    def weight(self):
        return self.shared[0] if hasattr(self, "shared") else self.out.weight

    def forward(self, x):
        return F.linear(self.norm(x), self.weight())


def _seeded_normal_(param, seed, name, std):
    g = torch.Generator().manual_seed((seed * 1000003 + zlib.crc32(name.encode())) % (2**63))
    with torch.no_grad():
        param.copy_(torch.randn(param.shape, generator=g, dtype=torch.float32) * std)


def init_parameters(module, spec, seed, prefix=""):
    """Every matrix normal(0, 0.02), the residual projections (wo, w2) 0.02/sqrt(2L); norms 1.
    A tied output copy is drawn under the embedding's name, so it starts equal to it."""
    resid_std = 0.02 / math.sqrt(2 * spec.num_layers)
    for name, p in module.named_parameters():
        full = prefix + name
        if full.endswith("norm.weight"):
            with torch.no_grad():
                p.fill_(1.0)
            continue
        if full == "head.out.weight" and spec.tie_embeddings:
            full = "embedding.tok.weight"
        std = resid_std if full.endswith(("wo.weight", "w2.weight")) else 0.02
        _seeded_normal_(p, seed, full, std)


def build_llama_parts(spec, first_layer, last_layer, embedding, head, seed):
    """The parts of layers [first_layer, last_layer) of the spec's model, with the embedding
    and/or the head when the stage holds them, initialised as the whole model would be."""
    emb = Embedding(spec) if embedding else None
    blocks = {i: Block(spec) for i in range(first_layer, last_layer)}
    hd = None
    if head:
        hd = Head(spec, emb.tok.weight if (emb is not None and spec.tie_embeddings) else None)
    parts = ModelParts(emb, blocks, hd, tied_output="head.out.weight" if (
        head and spec.tie_embeddings and emb is None) else None,
        tied_input="embedding.tok.weight" if spec.tie_embeddings else None)
    init_parameters(parts, spec, seed)
    return parts


def weight_decays(param):
    """AdamW's weight decay applies to matrices and embeddings, not to vectors (norm weights,
    biases of a user's module)."""
    return param.dim() >= 2
