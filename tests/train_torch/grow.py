"""A replacement rank joins a running job (--allow-grow, --join): 3 one-stage replicas
(micro-batches 4, 3, 1 on device types fast, fast, slow; host and gloo adaptors) run with
--survive DIR --allow-grow under mixcclrun; once rank 0 has printed step K a 4th process (its
own mixcclrun, a slow rank on the gloo adaptor) starts with --join DIR. The job takes it at the
next step boundary, re-plans for fast, fast, slow, slow and finishes with 4 ranks reporting.
Then a run of the grown plan started from the state at the join (DIR/grow-1) must give the
same losses from the step after the join on, within fp32 rounding.

With VICTIM, lose-then-grow: the job (then 4 replicas, 3, 3, 1, 1, under mixcclrun
--keep-going) loses rank VICTIM, killed once rank 0 has printed step K; the survivors shrink and
re-plan (4, 3, 1), and the replacement, started at the first step after the recovery, brings
the plan back to 4 ranks.

  grow.py SPEC PLAN CLUSTER STEPS K MIXCCLRUN PLANNER ADAPTORS JOINER_ADAPTOR JOINER_TYPE
          REFERENCE_ADAPTORS [VICTIM]"""
import json
import os
import re
import shutil
import sys

import grow_job
import harness
import survive_job


def main():
    (spec, plan, cluster, steps, after, mixcclrun, planner, adaptors, joiner_adaptor,
     joiner_type, ref_adaptors) = sys.argv[1:12]
    victim = int(sys.argv[12]) if len(sys.argv) > 12 else None
    steps = int(steps)
    tmp = harness.workdir()
    try:
        survive_dir = os.path.join(tmp, "survive")
        report = os.path.join(tmp, "job.json")
        common = grow_job.train_args(spec, cluster, planner, steps)
        keep_going = ["--keep-going"] if victim is not None else []
        job = [mixcclrun, *keep_going, "--adaptors", adaptors, sys.executable, "-m", "mixccl.train",
               "--plan", plan, "--survive", survive_dir, "--allow-grow", "--report", report,
               *common]
        joiner = [mixcclrun, "--adaptors", joiner_adaptor, sys.executable, "-m",
                  "mixccl.train", "--join", survive_dir, "--device-type", joiner_type, *common]
        rc, text, joiner_rc, joiner_text = grow_job.run_with_joiner(job, joiner, int(after),
                                                                    victim)
        joined = re.search(r"\[0\] mixccl.train: rank (\d) joined after step (\d+) \(the rank "
                           r"from \S+ pid \d+ \(device type (\w+)\)\): 4 ranks go on with "
                           r"\S+ \(micro-batches ([0-9,]+)\); join ([0-9.]+) s", text)
        lost = re.search(rf"\[0\] mixccl.train: lost rank\(s\) {victim} in step (\d+): 3 ranks "
                         r"go on with \S+ \(micro-batches ([0-9,]+)\)", text)
        if rc != 0 or joiner_rc != 0 or not joined or (victim is not None and not lost):
            print(f"grow: the job exited {rc}, the joiner {joiner_rc}, join line "
                  f"{'found' if joined else 'missing'}, recovery line "
                  f"{'found' if lost else 'missing'}")
            return 1
        at = int(joined.group(2))
        with open(report) as f:
            ranks = [len(s["ranks"]) for s in json.load(f)["steps"]]
        ref_report = os.path.join(tmp, "reference.json")
        rc = survive_job.run_reference(mixcclrun, ref_adaptors, spec,
                                       os.path.join(survive_dir, "grow-1"), steps, ref_report)
        if rc != 0:
            print(f"grow: the reference run exited {rc}")
            return 1
        worst, missing, ref_ok = survive_job.compare(report, ref_report, at + 1, steps)
        ok = (worst <= 1e-6 and not missing and ref_ok and ranks[at:] == [4] * (steps - at)
              and 3 in ranks[:at])
        if lost:
            print(f"grow: rank {victim} lost in step {lost.group(1)}, micro-batches "
                  f"{lost.group(2)} after the recovery")
        print(f"grow: rank {joined.group(1)} (device type {joined.group(3)}) joined after step "
              f"{at} of {steps}, micro-batches {joined.group(4)} after re-planning, join "
              f"{joined.group(5)} s; ranks reporting per step {ranks}; steps {at + 1}-{steps} "
              f"against the reference: largest relative difference {worst:.1e} "
              f"{'<=' if worst <= 1e-6 else '>'} 1e-06, steps missing {missing}")
        return 0 if ok else 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


sys.exit(main())
