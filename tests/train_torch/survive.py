"""A job that loses a replica finishes (--survive): 4 one-stage replicas (micro-batches 3, 3, 1,
1 on device types fast, fast, slow, slow; host and gloo adaptors) under `mixcclrun
--keep-going`; rank 3 is killed with SIGKILL once rank 0 has printed step K. The survivors
shrink, re-plan with mixccl-plan for fast, fast, slow, take the state from the surviving
replicas and finish. Then a run of the survivors' plan started from the state they went on from
(the recovery's checkpoint) must give the same losses, within fp32 rounding.

  survive.py SPEC PLAN CLUSTER STEPS K MIXCCLRUN PLANNER ADAPTORS REFERENCE_ADAPTORS [VICTIM]

VICTIM (default 3) is the rank killed; REFERENCE_ADAPTORS are the survivors' adaptors."""
import os
import re
import shutil
import sys

import harness
import survive_job


def main():
    (spec, plan, cluster, steps, kill_after, mixcclrun, planner, adaptors,
     ref_adaptors) = sys.argv[1:10]
    victim = int(sys.argv[10]) if len(sys.argv) > 10 else 3
    steps, kill_after = int(steps), int(kill_after)
    tmp = harness.workdir()
    try:
        survive_dir = os.path.join(tmp, "survive")
        report = os.path.join(tmp, "job.json")
        cmd = [mixcclrun, "--keep-going", "--adaptors", adaptors, sys.executable, "-m",
               "mixccl.train", "--model-spec", spec, "--plan", plan, "--cluster", cluster,
               "--survive", survive_dir, "--planner", planner, "--steps", str(steps),
               "--threads", "1", "--timeout", "20", "--report", report]
        rc, text, killed = survive_job.run_and_kill(cmd, kill_after, victim)
        recovered = re.search(rf"\[\d+\] mixccl.train: lost rank\(s\) {victim} in step (\d+): 3 ranks "
                              r"go on with \S+ \(micro-batches ([0-9,]+)\); recovery ([0-9.]+) s", text)
        if rc != 0 or not killed or not recovered:
            print(f"survive: the job exited {rc}, killed {killed}, "
                  f"recovery line {'found' if recovered else 'missing'}")
            return 1
        failed_step = int(recovered.group(1))
        ref_report = os.path.join(tmp, "reference.json")
        rc = survive_job.run_reference(mixcclrun, ref_adaptors, spec,
                                       os.path.join(survive_dir, "recovery-1"), steps, ref_report)
        if rc != 0:
            print(f"survive: the reference run exited {rc}")
            return 1
        worst, missing, ref_ok = survive_job.compare(report, ref_report, failed_step, steps)
        ok = worst <= 1e-6 and not missing and ref_ok
        print(f"survive: rank {victim} lost in step {failed_step} of {steps}, micro-batches "
              f"{recovered.group(2)} after re-planning, recovery {recovered.group(3)} s; steps "
              f"{failed_step}-{steps} of the survivors against the reference: largest relative "
              f"difference {worst:.1e} {'<=' if worst <= 1e-6 else '>'} 1e-06, steps missing "
              f"{missing}")
        return 0 if ok else 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


sys.exit(main())
