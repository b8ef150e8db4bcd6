"""The adapter for Hugging Face `transformers` causal LMs of the LLaMA family (LlamaForCausalLM
and models with the same layout: model.embed_tokens, model.layers, model.norm, model.rotary_emb,
lm_head). Each decoder layer becomes a block (hidden states -> hidden states) that computes its
rotary position embeddings itself, so a stage needs nothing from the layers it does not hold.
Causal attention comes from SDPA's is_causal (no mask tensor is passed), so the model must use
attn_implementation "sdpa"."""
import torch
import torch.nn as nn

from .parts import restrict_parts, user_model_parts
from .spec import InputError


class HFDecoderBlock(nn.Module):
    def __init__(self, layer, rotary):
        super().__init__()
        self.layer = layer
        self.rotary = [rotary]  # shared by every block, parameter-free: not registered here

    def forward(self, x):
        positions = torch.arange(x.shape[1], device=x.device).unsqueeze(0)
        cos_sin = self.rotary[0](x, position_ids=positions)
        out = self.layer(x, attention_mask=None, position_ids=positions,
                         position_embeddings=cos_sin)
        return out[0] if isinstance(out, tuple) else out


class HFHead(nn.Module):
    def __init__(self, norm, lm_head):
        super().__init__()
        self.norm = norm
        self.lm_head = lm_head

    def forward(self, x):
        return self.lm_head(self.norm(x))


def hf_causal_lm_parts(model):
    """ModelParts of a whole transformers causal LM (embedding, decoder layers, norm + lm_head)."""
    impl = getattr(model.config, "_attn_implementation", None)
    if impl != "sdpa":
        raise InputError(f"the transformers model uses attention "
                         f"'{impl}'; build it with attn_implementation=\"sdpa\" (causal "
                         "attention without a mask tensor)")
    inner = model.model
    blocks = [HFDecoderBlock(layer, inner.rotary_emb) for layer in inner.layers]
    return user_model_parts(inner.embed_tokens, blocks, HFHead(inner.norm, model.lm_head))


def llama_config_from_spec(spec):
    """A transformers LlamaConfig of the planner's model spec (SwiGLU, RMSNorm eps 1e-5)."""
    from transformers import LlamaConfig
    if not spec.gated_mlp:
        raise InputError("a transformers Llama has a gated (SwiGLU) MLP; the model "
                         "spec says gated_mlp false")
    return LlamaConfig(vocab_size=spec.vocab_size, hidden_size=spec.hidden_size,
                       intermediate_size=spec.ffn_hidden_size,
                       num_hidden_layers=spec.num_layers,
                       num_attention_heads=spec.num_attention_heads,
                       num_key_value_heads=spec.num_kv_heads,
                       max_position_embeddings=spec.seq_length, rms_norm_eps=1e-5,
                       tie_word_embeddings=spec.tie_embeddings, attention_dropout=0.0,
                       attn_implementation="sdpa")


def build_parts(spec, seed, first_layer, last_layer, embedding, head):
    """`--model-module mixccl.train.hf:build_parts`: a LlamaForCausalLM with random weights from
    the spec (nothing is downloaded), built whole from `seed` on every rank and cut to the
    stage, so every split starts from the single-process weights."""
    from transformers import LlamaForCausalLM
    torch.manual_seed(seed)
    model = LlamaForCausalLM(llama_config_from_spec(spec)).float()
    return restrict_parts(hf_causal_lm_parts(model), first_layer, last_layer, embedding, head)
