"""`--profile-out PROFILE.json --cluster CLUSTER.json`: PyTorch's own per-layer times, in the
planner's profile format (docs/planner.md, read by `mixccl-plan --profile`), so that the
planner plans from what this model costs in PyTorch on each device type present.

For every device type of the cluster spec that runs here (cpu, or cuda when present; the
device map as in training), with its cpu_threads on CPU: one block's forward and backward
(timed inside a stack of up to 4 blocks, below), the embedding's and the head's (final norm,
output projection and the loss), at each
micro-batch size, the mean of `repeats` timed runs after a warm-up; and the per-step update
(zeroing, the gradients' squares for the norm, AdamW) of one block's parameters, per
parameter. The types take turns repeat by repeat, so the machine's drift hits them alike.

Each type is measured at its emulated speed (emulation.py, --slowdown-base included), as
mixccl-train's profiler does: every operation is timed on the clock a run of that type uses
and followed by the type's idle (the next operation starts with the caches a run leaves it),
and the profile gives the time times the type's slowdown, which is what a rank of that type
computes for it. The update is not stretched (a run does not stretch it either)."""
import json
import time

import torch
import torch.nn.functional as F

from .devices import device_kind, load_cluster, local_device, parse_device_map
from .emulation import SlowdownIdler, type_slowdown, uses_cpu_clock
from .model import build_llama_parts
from .spec import InputError

STACK_LAYERS = 4  # the blocks of the stack a block is timed in


def _sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _timed(fn, device, idler=None):
    """The compute seconds of fn() (idler's clock), followed by the idle of its device."""
    _sync(device)
    if idler is None:
        t0 = time.perf_counter()
        fn()
        _sync(device)
        return time.perf_counter() - t0
    op = idler.start()
    fn()
    _sync(device)
    seconds = idler.compute_seconds(op)
    idler.idle(seconds, time.perf_counter() - op[0])
    return seconds


def _measure_once(parts, spec, mb, device, autocast, idler):
    """Compute seconds at micro-batch mb: the forward (embedding, the stack's blocks, head and
    loss) and the backward of the profiled stack, each as one operation as a stage runs them,
    and of the embedding alone and the head alone; each followed by the idle of its device."""
    t = spec.seq_length
    tokens = torch.randint(0, spec.vocab_size, (mb, t), device=device)
    targets = torch.randint(0, spec.vocab_size, (mb, t), device=device)
    ctx = lambda: torch.autocast(device.type, dtype=torch.bfloat16, enabled=autocast)  # noqa: E731
    holder, out = {}, {}

    def stack_forward():
        with ctx():
            x = parts.embedding(tokens)
            for layer in parts.layers:
                x = parts.blocks[str(layer)](x)
            logits = parts.head(x)
        holder["loss"] = F.cross_entropy(logits.float().flatten(0, 1), targets.flatten())
    out["stack_f"] = _timed(stack_forward, device, idler)
    out["stack_b"] = _timed(lambda: holder["loss"].backward(), device, idler)
    with ctx():
        out["embedding_f"] = _timed(lambda: holder.update(y=parts.embedding(tokens)), device,
                                    idler)
    g = torch.randn_like(holder["y"])
    out["embedding_b"] = _timed(lambda: holder["y"].backward(g), device, idler)
    h = torch.randn(mb, t, spec.hidden_size, device=device, requires_grad=True)

    def head_forward():
        with ctx():
            logits = parts.head(h)
        holder["loss"] = F.cross_entropy(logits.float().flatten(0, 1), targets.flatten())
    out["head_f"] = _timed(head_forward, device, idler)
    out["head_b"] = _timed(lambda: holder["loss"].backward(), device, idler)
    return out


def _measure_update(parts, device, repeats):
    params = [p for p in parts.blocks["0"].parameters()]
    for p in params:
        p.grad = torch.randn_like(p)
    opt = torch.optim.AdamW(params, lr=1e-4, foreach=False)

    def update():
        sq = sum(p.grad.double().pow(2).sum() for p in params)
        float(sq)
        opt.step()
        for p in params:
            p.grad.zero_()
    update()
    times = [_timed(update, device) for _ in range(repeats)]
    return sum(p.numel() for p in params), sum(times) / len(times)


def profile(spec, cluster_path, device_map_text, micro_batches, repeats, seed=1,
            slowdown_base=1.0):
    cluster = load_cluster(cluster_path)
    device_map = parse_device_map(device_map_text)
    types = []
    for name, t in cluster.items():
        kind = device_kind(name, device_map)
        if kind == "cuda" and not torch.cuda.is_available():
            continue  # a type this machine does not have: the planner's estimate stays
        types.append((name, local_device(kind, 0), t.get("cpu_threads", 0)))
    if not types:
        raise InputError(f"--profile-out: no device type of {cluster_path} runs here "
                         "(a cuda type needs a CUDA device)")
    default_threads = torch.get_num_threads()
    built, idlers, slowdowns = {}, {}, {}
    # A block is timed inside a stack of up to STACK_LAYERS blocks with the embedding and the
    # head, one operation per pass as a stage runs it: its time is the stack's minus the
    # embedding's and the head's, over the blocks. Timed alone, each block would pay on its own
    # what a stage pays once per pass (the start after the emulated device's sleep, with
    # colder caches, and the call overhead), which priced small micro-batches up to 40% too
    # high (docs/training-results.md).
    stack = min(spec.num_layers, STACK_LAYERS)
    for name, device, threads in types:
        parts = build_llama_parts(spec, 0, stack, True, True, seed).to(device)
        built[name] = parts
        slowdowns[name] = type_slowdown(cluster, name, cluster_path, slowdown_base)
        torch.set_num_threads(threads or default_threads)  # the clock depends on the count
        idlers[name] = SlowdownIdler(slowdowns[name], uses_cpu_clock(device))
    torch.set_num_threads(default_threads)
    sums = {(name, mb): {} for name, _, _ in types for mb in micro_batches}
    for rep in range(repeats + 1):  # the first round warms up and is not kept
        for name, device, threads in types:
            torch.set_num_threads(threads or default_threads)
            autocast = device.type == "cuda" and spec.param_dtype == "bf16"
            for mb in micro_batches:
                r = _measure_once(built[name], spec, mb, device, autocast, idlers[name])
                if rep == 0:
                    continue
                for k, v in r.items():
                    sums[(name, mb)][k] = sums[(name, mb)].get(k, 0.0) + v
    entries = []
    for name, device, threads in types:
        for mb in micro_batches:
            s = {k: slowdowns[name] * v / repeats for k, v in sums[(name, mb)].items()}
            for d in ("_f", "_b"):
                s["layer" + d] = (s["stack" + d] - s["embedding" + d] - s["head" + d]) / stack
            for part, prefix in (("layer", "layer"), ("embedding", "embedding"), ("head", "head")):
                e = {"device_type": name, "tp": 1, "micro_batch": mb,
                     "forward_ms": max(s[prefix + "_f"] * 1e3, 1e-6),
                     "backward_ms": max(s[prefix + "_b"] * 1e3, 1e-6)}
                if part != "layer":
                    e["part"] = part
                entries.append(e)
        torch.set_num_threads(threads or default_threads)
        params, seconds = _measure_update(built[name], device, repeats)
        entries.append({"device_type": name, "part": "update", "parameters": params,
                        "update_ms": seconds * 1e3})
    torch.set_num_threads(default_threads)
    return {"model": spec.name, "seq_length": spec.seq_length, "entries": entries}


def write_profile(spec, args):
    sizes = [int(x) for x in args.profile_micro_batches.split(",")]
    result = profile(spec, args.cluster, args.device_map, sizes, args.profile_repeats, args.seed,
                     args.slowdown_base)
    with open(args.profile_out, "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    print(f"mixccl.train: wrote {args.profile_out}: {len(result['entries'])} entries for "
          f"device types {', '.join(sorted({e['device_type'] for e in result['entries']}))}",
          flush=True)
