"""Where each rank runs and whether its stage fits there.

Device map: a plan names device types (the cluster spec's names); `--device-map TYPE=DEV,...`
maps a type to `cpu` or `cuda`. Without an entry, a type whose name names a GPU (h100, a100,
v100, h200, b200, l40, mi<N>, or containing "gpu" or "cuda") runs on `cuda`, any other on
`cpu`. A CUDA rank takes GPU (LOCAL_RANK mod the GPUs present). A type with `cpu_threads` in
the cluster spec (--cluster) runs its ranks with that many torch threads."""
import re

import torch

from .spec import InputError, load_json

_GPU_NAME = re.compile(r"^(h100|h200|h800|a100|a800|a10|v100|b100|b200|l4|l40|l40s|t4|mi\d+\w*)\b|gpu|cuda",
                       re.IGNORECASE)


def parse_device_map(text):
    out = {}
    for item in filter(None, (text or "").split(",")):
        name, sep, dev = item.partition("=")
        if not sep or dev not in ("cpu", "cuda"):
            raise InputError(f"--device-map: '{item}' is not TYPE=cpu or TYPE=cuda")
        out[name] = dev
    return out


def device_kind(device_type, device_map):
    if device_type in device_map:
        return device_map[device_type]
    return "cuda" if _GPU_NAME.search(device_type) else "cpu"


def load_cluster(path):
    """The cluster spec's device types by name (only the fields mixccl.train reads)."""
    obj = load_json(path, "cluster spec")
    types = obj.get("device_types") if isinstance(obj, dict) else None
    if not isinstance(types, list) or not types:
        raise InputError(f"cluster spec {path}: 'device_types' must be a non-empty array")
    out = {}
    for t in types:
        if not isinstance(t, dict) or not isinstance(t.get("name"), str):
            raise InputError(f"cluster spec {path}: every device type needs a 'name'")
        out[t["name"]] = t
    return out


def local_device(kind, local_rank):
    if kind == "cpu":
        return torch.device("cpu")
    return torch.device("cuda", local_rank % max(torch.cuda.device_count(), 1))


def stage_memory_bytes(spec, role, micro_batches, num_params):
    """Weights, gradients and the two AdamW moments (fp32: 16 bytes per parameter), and the
    activations of the micro-batches in flight at once in 1F1B (min(P - stage, m)), per layer
    about (10 C + 3 F) T values plus the attention's T x T scores per head; layers the plan
    recomputes keep only their input (C T)."""
    c, f, t, h = spec.hidden_size, spec.ffn_hidden_size, spec.seq_length, spec.num_attention_heads
    per_layer = (10 * c + 3 * f + h * t) * t * 4
    layers = role.last_layer - role.first_layer
    acts_per_seq = (layers - role.recompute) * per_layer + role.recompute * c * t * 4
    if role.has_head:
        acts_per_seq += 2 * spec.vocab_size * t * 4  # logits and their gradient
    in_flight = min(role.num_stages - role.stage, micro_batches)
    return 16 * num_params + in_flight * role.micro_batch * acts_per_seq


def stage_parameter_count(spec, role):
    c, f = spec.hidden_size, spec.ffn_hidden_size
    kv = spec.num_kv_heads * spec.head_dim
    block = 2 * c * c + 2 * c * kv + (3 if spec.gated_mlp else 2) * c * f + 2 * c
    n = (role.last_layer - role.first_layer) * block
    if role.has_embedding:
        n += spec.vocab_size * c
    if role.has_head:
        n += c + (0 if spec.tie_embeddings and role.has_embedding else spec.vocab_size * c)
    return n
