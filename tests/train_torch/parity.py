"""A plan's fp32 losses equal the single-process run's (same seed, data, global batch and
micro-batch count): relative difference <= 1e-5 at every step.

  parity.py SPEC PLAN NRANKS STEPS torchrun | srun | mixcclrun PATH ADAPTORS

Environment (the GPU check, docs/gpu.md): PARITY_PLAN_ARGS, more arguments for the plan's run
(say `--device-map fast=cuda`); PARITY_BOUND, the bound instead of 1e-5 (bf16 on a GPU rank);
PARITY_EXPECT, each rank's device:dtype as the report must give it (`cuda:fp32,cpu:fp32,...`),
so a run that forced a GPU rank proves it ran there."""
import json
import os
import shutil
import sys

import harness

BOUND = float(os.environ.get("PARITY_BOUND", "1e-5"))
PLAN_ARGS = os.environ.get("PARITY_PLAN_ARGS", "").split()
EXPECT = os.environ.get("PARITY_EXPECT", "")


def main():
    spec, plan, nranks, steps = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    tmp = harness.workdir()
    try:
        ref, got = os.path.join(tmp, "single.json"), os.path.join(tmp, "plan.json")
        rc, _ = harness.single(spec, steps, ref, harness.plan_micro_batches(plan))
        if rc != 0:
            print(f"parity: the single-process run failed (exit {rc})")
            return 1
        rc, _ = harness.launch(sys.argv[5:], plan, nranks, spec, steps, got, PLAN_ARGS)
        if rc != 0:
            print(f"parity: the plan's run failed (exit {rc})")
            return 1
        a, b = harness.losses(ref), harness.losses(got)
        if EXPECT:
            with open(got) as f:
                ranks = json.load(f)["steps"][-1]["ranks"]
            where = ",".join(f"{r['device']}:{r['compute_dtype']}" for r in ranks)
            print(f"parity: ranks ran on {where}")
            if where != EXPECT:
                print(f"parity: expected the ranks on {EXPECT}")
                return 1
        worst = max(abs(x - y) / abs(x) for x, y in zip(a, b))
        for i, (x, y) in enumerate(zip(a, b)):
            print(f"step {i + 1}: single {x:.8f} plan {y:.8f}")
        ok = len(a) == len(b) == steps and worst <= BOUND
        print(f"parity: {len(b)} of {steps} steps, largest relative difference {worst:.2e} "
              f"{'<=' if ok else 'NOT <='} {BOUND:g}")
        return 0 if ok else 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


sys.exit(main())
