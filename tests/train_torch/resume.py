"""A job checkpointed after step K and resumed reproduces the uninterrupted run's losses
exactly (the same plan: every rank reloads its stage, its AdamW state and the step, which
sets the data position).

  resume.py SPEC PLAN NRANKS STEPS K torchrun | mixcclrun PATH ADAPTORS"""
import os
import shutil
import sys

import harness


def main():
    spec, plan, n, steps, k = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    tmp = harness.workdir()
    try:
        whole, first, rest = (os.path.join(tmp, f) for f in ("whole.json", "first.json", "rest.json"))
        ckpt = os.path.join(tmp, "ckpt")
        launcher = sys.argv[6:]
        runs = [harness.launch(launcher, plan, n, spec, steps, whole),
                harness.launch(launcher, plan, n, spec, k, first, ["--checkpoint", ckpt]),
                harness.launch(launcher, plan, n, spec, steps, rest, ["--resume", ckpt])]
        if any(rc != 0 for rc, _ in runs):
            print(f"resume: a run failed (exits {[rc for rc, _ in runs]})")
            return 1
        files = sorted(os.listdir(ckpt))
        a = harness.losses(whole)
        b = harness.losses(first) + harness.losses(rest)
        for i, (x, y) in enumerate(zip(a, b)):
            print(f"step {i + 1}: uninterrupted {x!r} resumed {y!r}")
        ok = a == b and len(a) == steps and files == [f"rank{r}.pt" for r in range(n)]
        print(f"resume: checkpoint files {files}. steps {k + 1}-{steps} after the resume "
              f"{'equal' if ok else 'DIFFER FROM'} the uninterrupted run's")
        return 0 if ok else 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


sys.exit(main())
