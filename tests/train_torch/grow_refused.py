"""A replacement for a job that takes none is refused: a 2-stage pipeline runs with --survive
DIR but without --allow-grow under mixcclrun; once rank 0 has printed step K a process starts
with --join DIR. It must exit 1 at once with the refusal, and the job must finish undisturbed
(every step reported by its 2 ranks).

  grow_refused.py SPEC PLAN CLUSTER STEPS K MIXCCLRUN PLANNER ADAPTORS JOINER_TYPE"""
import json
import os
import shutil
import sys
import time

import grow_job
import harness


def main():
    spec, plan, cluster, steps, after, mixcclrun, planner, adaptors, joiner_type = sys.argv[1:10]
    steps = int(steps)
    tmp = harness.workdir()
    try:
        survive_dir = os.path.join(tmp, "survive")
        report = os.path.join(tmp, "job.json")
        common = grow_job.train_args(spec, cluster, planner, steps)
        job = [mixcclrun, "--adaptors", adaptors, sys.executable, "-m", "mixccl.train",
               "--plan", plan, "--survive", survive_dir, "--report", report, *common]
        # By hand, without a launcher: the joiner's adaptor from MIXCCL_ADAPTOR.
        joiner = ["env", "MIXCCL_ADAPTOR=host", sys.executable, "-m", "mixccl.train", "--join",
                  survive_dir, "--device-type", joiner_type, *common]
        started = time.monotonic()
        rc, _, joiner_rc, joiner_text = grow_job.run_with_joiner(job, joiner, int(after))
        with open(report) as f:
            ranks = [len(s["ranks"]) for s in json.load(f)["steps"]]
        print(f"grow_refused: the joiner exited {joiner_rc} "
              f"({'with' if 'mixccl.train: --join' in joiner_text else 'without'} a refusal), "
              f"the job exited {rc} after {time.monotonic() - started:.0f} s with ranks "
              f"reporting per step {ranks}")
        return 0 if rc == 0 and joiner_rc == 1 and ranks == [2] * steps else 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


sys.exit(main())
