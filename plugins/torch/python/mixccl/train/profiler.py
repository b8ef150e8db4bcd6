"""`--profile-out PROFILE.json --cluster CLUSTER.json`: PyTorch's own per-layer times, in the
planner's profile format (docs/planner.md, read by `mixccl-plan --profile`), so that the
planner plans from what this model costs in PyTorch on each device type present.

For every device type of the cluster spec that runs here (cpu, or cuda when present; the
device map as in training), with its cpu_threads on CPU: one block's forward and backward,
the fixed cost of a stage's pass whatever its blocks, the embedding's and the head's (final
norm, output projection and the loss), all from whole passes over stacks of blocks (below),
at each micro-batch size, the fastest of `repeats` timed runs after a warm-up, each
after an untimed pass of the same size; and the per-step update
(zeroing, the gradients' squares for the norm, AdamW) of one block's parameters, per
parameter. The types take turns repeat by repeat, so the machine's drift hits them alike.
On CPU types also what one point-to-point message between stages costs a stage per
micro-batch (part "message", message_cost.py).

Each type is measured at its emulated speed (emulation.py, --slowdown-base included), as
mixccl-train's profiler does: every operation is timed on the clock a run of that type uses
and followed by the type's idle (the next operation starts with the caches a run leaves it),
and the profile gives the time times the type's slowdown, which is what a rank of that type
computes for it. The update is not stretched (a run does not stretch it either)."""
import json
import statistics
import time

import torch
import torch.nn.functional as F

from . import message_cost
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
    """Compute seconds at micro-batch mb of four stages' forward and backward passes, each as
    one operation as a stage runs it and followed by the idle of its device: the whole stack
    (embedding, the stack's blocks, head and loss), the embedding alone, the head and loss
    alone, and one block alone (the last two from an input that wants its gradient, as a
    middle or last stage's)."""
    t = spec.seq_length
    tokens = torch.randint(0, spec.vocab_size, (mb, t), device=device)
    targets = torch.randint(0, spec.vocab_size, (mb, t), device=device)
    ctx = lambda: torch.autocast(device.type, dtype=torch.bfloat16, enabled=autocast)  # noqa: E731
    out = {}

    def stage(name, embedding, blocks, head):
        holder = {}
        x_in = None if embedding else torch.randn(mb, t, spec.hidden_size, device=device,
                                                   requires_grad=True)

        def forward():
            with ctx():
                x = parts.embedding(tokens) if embedding else x_in
                for layer in parts.layers[:blocks]:
                    x = parts.blocks[str(layer)](x)
                if head:
                    logits = parts.head(x)
            holder["y"] = (F.cross_entropy(logits.float().flatten(0, 1), targets.flatten())
                           if head else x)
        out[name + "_f"] = _timed(forward, device, idler)
        y = holder["y"]
        g = None if head else torch.randn_like(y)
        out[name + "_b"] = _timed(lambda: y.backward(g), device, idler)

    # One untimed pass of the stack first: a run repeats the same sizes pass after pass, so
    # its passes start with that size's memory already taken from the allocator and its
    # weights and activations warm, while the previous timed pass here was another size's
    # (it priced the largest micro-batches up to 8% dearer than the trainer ran them,
    # tests/train_torch/bench/pass_costs.py).
    stage("warm", True, len(parts.layers), True)
    del out["warm_f"], out["warm_b"]
    stage("full", True, len(parts.layers), True)
    stage("embedding", True, 0, False)
    stage("head", False, 0, True)
    stage("block", False, 1, False)
    return out


def _parts_of_a_pass(s, stack):
    """The profile's parts from _measure_once's times (forward "_f" and backward "_b"). Each
    stage timed pays the pass's fixed cost once: embedding = pass + e, head = pass + h, block =
    pass + l, full = pass + e + stack l + h; so full - embedding - head + block is
    (stack + 1) l. A stage of n blocks then costs pass + n l [+ e] [+ h], the whole stack
    exactly what it measured."""
    parts = {}
    for d in ("_f", "_b"):
        block = (s["full" + d] - s["embedding" + d] - s["head" + d] + s["block" + d]) / (stack + 1)
        fixed = s["block" + d] - block
        small = {"pass": fixed, "embedding": s["embedding" + d] - fixed,
                 "head": s["head" + d] - fixed}
        # A small part can come out below zero (its cost is within the noise of the passes it
        # is the difference of); the format wants it positive. Raising it to 0 and taking
        # that back from the blocks keeps the whole stack at what it measured.
        deficit = sum(-v for v in small.values() if v < 0.0)
        for k, v in small.items():
            parts[k + d] = max(v, 0.0)
        parts["layer" + d] = block - deficit / stack
    return parts


def _parts_of_repeats(samples, slowdown, stack):
    """The parts of one (device type, micro-batch) from the compute seconds of its timed
    repeats ({pass name: [seconds]}): the fastest of each pass's repeats times the type's
    slowdown, split by _parts_of_a_pass. The fastest, not the median: the machine's noise only
    ever slows a pass down, and it comes in spells of seconds (a KVM guest's cores ran the same
    work up to 1.32 times slower for 2-10% of the time, one core at a time, with no steal time
    reported: tests/train_torch/bench/core_speed.py, docs/training-results.md) that can cover
    most of a type's repeats, so the median still moved with them; the fastest is the machine's
    quiet speed, which is what the runs' fastest steps are compared with."""
    return _parts_of_a_pass({k: slowdown * min(v) for k, v in samples.items()}, stack)


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
    return sum(p.numel() for p in params), statistics.median(times)


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
    # Whole passes are timed, one operation each as a stage runs them: the stack of up to
    # STACK_LAYERS blocks with the embedding and the head, and the embedding, the head and one
    # block each alone (_parts_of_a_pass). What a stage pays once per pass whatever
    # its blocks (the start of the pass and of the autograd engine, the call overhead, the
    # start after the emulated device's sleep with colder caches) is the profile's "pass"
    # part. Pricing a stage as blocks alone undercounted that on stages of few blocks and
    # small micro-batches, and timing each block alone overcounted it (once per block).
    stack = min(spec.num_layers, STACK_LAYERS)
    for name, device, threads in types:
        parts = build_llama_parts(spec, 0, stack, True, True, seed).to(device)
        built[name] = parts
        slowdowns[name] = type_slowdown(cluster, name, cluster_path, slowdown_base)
        torch.set_num_threads(threads or default_threads)  # the clock depends on the count
        idlers[name] = SlowdownIdler(slowdowns[name], uses_cpu_clock(device))
    torch.set_num_threads(default_threads)
    samples = {(name, mb): {} for name, _, _ in types for mb in micro_batches}
    for rep in range(repeats + 1):  # the first round warms up and is not kept
        for name, device, threads in types:
            torch.set_num_threads(threads or default_threads)
            autocast = device.type == "cuda" and spec.param_dtype == "bf16"
            for mb in micro_batches:
                r = _measure_once(built[name], spec, mb, device, autocast, idlers[name])
                if rep == 0:
                    continue
                for k, v in r.items():
                    samples[(name, mb)].setdefault(k, []).append(v)
    entries = []
    for name, device, threads in types:
        for mb in micro_batches:
            s = _parts_of_repeats(samples[(name, mb)], slowdowns[name], stack)
            for part in ("layer", "embedding", "head", "pass"):
                e = {"device_type": name, "tp": 1, "micro_batch": mb,
                     "forward_ms": max(s[part + "_f"] * 1e3, 1e-6),
                     "backward_ms": max(s[part + "_b"] * 1e3, 1e-6)}
                if part != "layer":
                    e["part"] = part
                entries.append(e)
        torch.set_num_threads(threads or default_threads)
        params, seconds = _measure_update(built[name], device, repeats)
        entries.append({"device_type": name, "part": "update", "parameters": params,
                        "update_ms": seconds * 1e3})
    torch.set_num_threads(default_threads)
    entries += _message_entries(spec, [name for name, device, _ in types if device.type == "cpu"],
                                micro_batches)
    return {"model": spec.name, "seq_length": spec.seq_length, "entries": entries}


def _message_entries(spec, cpu_types, micro_batches):
    """The "message" part of every CPU type: what a stage pays per micro-batch to send to a
    neighbour and take the neighbour's (message_cost.py, two processes on the mixccl backend),
    the same for every CPU type (sending is not emulated). GPU ranks send on their own
    adaptor, which is not measured here: their links keep the cluster spec's price."""
    if not cpu_types:
        return []
    seconds = message_cost.measure(spec.seq_length, spec.hidden_size, micro_batches)
    return [{"device_type": name, "tp": 1, "micro_batch": mb, "part": "message",
             "forward_ms": max(seconds[mb] * 1e3, 1e-6),
             "backward_ms": max(seconds[mb] * 1e3, 1e-6)}
            for name in cpu_types for mb in micro_batches]


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
