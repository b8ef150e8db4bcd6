#!/usr/bin/env python3
"""Where the planner's price of a stage's pass goes wrong, part by part, in one process: the
profiler's measurement (mixccl.train's profiler, the parts the planner prices from) against the
passes as the trainer runs them (pipeline.py's forward and backward operations), interleaved
at each micro-batch size, at each device type's emulated speed.

  pass_costs.py MODEL.json CLUSTER.json [--slowdown-base 3] [--micro-batches 1,2,3,4,6,8,12,24]
                [--repeats 5] [--micro-batches-per-step 4] [--json OUT.json]

Stages run (the layouts of the accel benchmark's plans):
  full   embedding, every block of the stack, head and loss (a one-stage replica)
  first  embedding and one block; sends its activations (a pipeline's first stage)
  last   the other blocks, head and loss, from received activations (a pipeline's last stage)
For each: the measured compute per micro-batch (forward + backward, x the type's slowdown, as
a run reports it) and the profile's price of it as mixccl-plan charges it, with the profile's
"pass" part (pass + embedding + n layers + head) and without it (layer = (stack - embedding -
head) / stack, the decomposition before that part): their ratio per repeat (paired, so that a
slow spell of the machine hits both), median over the repeats. Results and their reading:
docs/training-results.md, "Where the planner's price of a stage goes wrong, part by part"."""
import argparse
import json
import statistics
import sys

import torch
import torch.nn.functional as F

from mixccl.train import profiler
from mixccl.train.devices import load_cluster
from mixccl.train.emulation import SlowdownIdler, type_slowdown, uses_cpu_clock
from mixccl.train.model import build_llama_parts
from mixccl.train.pipeline import StageTimes
from mixccl.train.spec import load_model_spec


def stage_passes(parts, layers, embedding, head, spec, mb, m, idler):
    """Compute seconds per micro-batch of m forward-backward pairs of a stage of `layers`, each
    operation as pipeline.py times it (the loss summed and read on the last stage, the
    activations copied for the send on the others)."""
    t, c = spec.seq_length, spec.hidden_size
    times = StageTimes()
    for _ in range(m):
        tokens = torch.randint(0, spec.vocab_size, (mb, t))
        targets = torch.randint(0, spec.vocab_size, (mb, t))
        x_in = None if embedding else torch.randn(mb, t, c, requires_grad=True)
        op = idler.start()
        x = parts.embedding(tokens) if embedding else x_in
        for layer in layers:
            x = parts.blocks[str(layer)](x)
        if head:
            out = F.cross_entropy(parts.head(x).float().flatten(0, 1), targets.flatten(),
                                  reduction="sum") / (mb * t)
            out.item()
        else:
            out = x
            out.detach().float().contiguous()
        times.add_compute(idler, op)
        grad = None if head else torch.randn(mb, t, c)
        op = idler.start()
        out.backward(grad)
        times.add_compute(idler, op)
        if x_in is not None:
            x_in.grad.contiguous()
    return times.compute_s / m


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model")
    ap.add_argument("cluster")
    ap.add_argument("--slowdown-base", type=float, default=3.0)
    ap.add_argument("--micro-batches", default="1,2,3,4,6,8,12,24")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--micro-batches-per-step", type=int, default=4)
    ap.add_argument("--json")
    a = ap.parse_args()
    torch.set_num_threads(1)
    spec = load_model_spec(a.model)
    cluster = load_cluster(a.cluster)
    sizes = [int(x) for x in a.micro_batches.split(",")]
    stack = min(spec.num_layers, profiler.STACK_LAYERS)
    device = torch.device("cpu")
    stages = {"full": (list(range(stack)), True, True), "first": ([0], True, False),
              "last": (list(range(1, stack)), False, True)}
    samples = {}  # (type, mb, what) -> [seconds]
    for rep in range(a.repeats + 1):  # the first round warms up
        for name in cluster:
            k = type_slowdown(cluster, name, a.cluster, a.slowdown_base)
            idler = SlowdownIdler(k, uses_cpu_clock(device))
            parts = build_llama_parts(spec, 0, stack, True, True, 1)
            for mb in sizes:
                got = {}
                prof = profiler._measure_once(parts, spec, mb, device, False, idler)
                p = profiler._parts_of_a_pass({key: k * v for key, v in prof.items()}, stack)
                for d in ("_f", "_b"):  # the decomposition without a pass part
                    p["old_layer" + d] = k * (prof["full" + d] - prof["embedding" + d] -
                                              prof["head" + d]) / stack
                    p["old_embedding" + d] = k * prof["embedding" + d]
                    p["old_head" + d] = k * prof["head" + d]
                for key in ("layer", "pass", "embedding", "head"):
                    got[key] = p[key + "_f"] + p[key + "_b"]
                for sname, (layers, emb, hd) in stages.items():
                    got["run_" + sname] = stage_passes(parts, layers, emb, hd, spec, mb,
                                                       a.micro_batches_per_step, idler)
                for sname, (layers, emb, hd) in stages.items():
                    for model, pre, fixed in (("pass", "", True), ("old", "old_", False)):
                        price = sum(p[pre + "layer" + d] * len(layers)
                                    + (p[pre + "embedding" + d] if emb else 0.0)
                                    + (p[pre + "head" + d] if hd else 0.0)
                                    + (p["pass" + d] if fixed else 0.0) for d in ("_f", "_b"))
                        # Paired with the run measured just after it: a slow spell of the
                        # machine hits both.
                        got[f"ratio_{model}_{sname}"] = price / got["run_" + sname]
                if rep == 0:
                    continue
                for key, v in got.items():
                    samples.setdefault((name, mb, key), []).append(v)
    med = {key: statistics.median(v) for key, v in samples.items()}
    print("| type | mb | stage | run ms per micro-batch | price / run, no pass part | "
          "price / run, with the pass part | pass part ms |")
    print("|---|---|---|---|---|---|---|")
    rows = []
    for name in cluster:
        for mb in sizes:
            for sname in stages:
                r = {"type": name, "micro_batch": mb, "stage": sname,
                     "run_ms": med[(name, mb, "run_" + sname)] * 1e3,
                     "ratio_old": med[(name, mb, "ratio_old_" + sname)],
                     "ratio_pass": med[(name, mb, "ratio_pass_" + sname)]}
                r.update({key + "_ms": med[(name, mb, key)] * 1e3
                          for key in ("layer", "pass", "embedding", "head")})
                rows.append(r)
                print(f"| {name} | {mb} | {sname} | {r['run_ms']:.2f} | {r['ratio_old']:.3f} | "
                      f"{r['ratio_pass']:.3f} | {r['pass_ms']:.2f} |")
    if a.json:
        json.dump(rows, open(a.json, "w"), indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
