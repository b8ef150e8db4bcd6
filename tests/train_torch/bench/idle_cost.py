#!/usr/bin/env python3
"""Whether the same small piece of a stage's work costs more CPU time after the rank has been
idle: the pipeline's slow first stage at one sequence (embedding and one block of the accel
model, forward and backward, one torch thread, pinned to one core), timed in the thread's CPU
time after a pause of G ms before it, the pauses interleaved piece by piece so that the
machine's slow spells hit them all alike. A pause is a sleep (G > 0) or a busy loop in Python
for -G ms (G < 0: the core never idles).

  idle_cost.py [--core 0] [--gaps 0,1,5,10,30,-10,-30] [--rounds 6] [--per-round 40]

Prints the median CPU ms of the piece per gap for each round and over all.
Results: docs/training-results.md, "Where the planner's price of a stage goes wrong"."""
import argparse
import os
import statistics as st
import time

import torch

from mixccl.train.model import build_llama_parts
from mixccl.train.spec import load_model_spec

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--core", type=int, default=0)
    ap.add_argument("--gaps", default="0,1,5,10,30,-10,-30")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--per-round", type=int, default=40)
    ap.add_argument("--model", default=os.path.join(HERE, "accel-model.json"))
    a = ap.parse_args()
    torch.set_num_threads(1)
    os.sched_setaffinity(0, {a.core})
    spec = load_model_spec(a.model)
    parts = build_llama_parts(spec, 0, spec.num_layers, True, True, 1)
    tokens = torch.randint(0, spec.vocab_size, (1, spec.seq_length))

    def piece():
        t0 = time.thread_time()
        x = parts.blocks["0"](parts.embedding(tokens))
        x.backward(torch.ones_like(x))
        return time.thread_time() - t0

    def pause(g):
        if g > 0:
            time.sleep(g / 1e3)
        elif g < 0:
            until = time.perf_counter() - g / 1e3
            while time.perf_counter() < until:
                pass

    for _ in range(50):
        piece()
    gaps = [float(g) for g in a.gaps.split(",")]
    got = {g: [] for g in gaps}
    for r in range(a.rounds):
        for _ in range(a.per_round):
            for g in gaps:
                pause(g)
                got[g].append(piece() * 1e3)
        print(f"round {r + 1}: " + "  ".join(
            f"gap {g:g}: {st.median(got[g][-a.per_round:]):.3f}" for g in gaps), flush=True)
    print("all:     " + "  ".join(f"gap {g:g}: {st.median(v):.3f}" for g, v in got.items()))


if __name__ == "__main__":
    main()
