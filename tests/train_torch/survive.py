"""A job that loses a replica finishes (--survive): 4 one-stage replicas (micro-batches 3, 3, 1,
1 on device types fast, fast, slow, slow; host and gloo adaptors) under `mixcclrun
--keep-going`; rank 3 is killed with SIGKILL once rank 0 has printed step K. The survivors
shrink, re-plan with mixccl-plan for fast, fast, slow, take the state from the surviving
replicas and finish. Then a run of the survivors' plan started from the state they went on from
(the recovery's checkpoint) must give the same losses, within fp32 rounding. The survivors must
finish their first step after the recovery within half the job's --timeout of the kill.

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
    timeout_s = 30
    tmp = harness.workdir()
    try:
        survive_dir = os.path.join(tmp, "survive")
        report = os.path.join(tmp, "job.json")
        cmd = [mixcclrun, "--keep-going", "--adaptors", adaptors, sys.executable, "-m",
               "mixccl.train", "--model-spec", spec, "--plan", plan, "--cluster", cluster,
               "--survive", survive_dir, "--planner", planner, "--steps", str(steps),
               "--threads", "1", "--timeout", str(timeout_s), "--report", report]
        times = {}
        rc, text, killed = survive_job.run_and_kill(cmd, kill_after, victim, times=times)
        recovered = re.search(rf"\[\d+\] mixccl.train: lost rank\(s\) {victim} in step (\d+): 3 ranks "
                              r"go on with \S+ \(micro-batches ([0-9,]+)\); recovery ([0-9.]+) s", text)
        if rc != 0 or not killed or not recovered:
            print(f"survive: the job exited {rc}, killed {killed}, "
                  f"recovery line {'found' if recovered else 'missing'}")
            return 1
        failed_step = int(recovered.group(1))
        checked = survive_job.check_recovery_and_reference(
            "survive", times, timeout_s, mixcclrun, ref_adaptors, spec, survive_dir, steps, tmp,
            report, failed_step)
        if checked is None:
            return 1
        recovery_s, worst, missing, ok = checked
        print(f"survive: rank {victim} lost in step {failed_step} of {steps}, micro-batches "
              f"{recovered.group(2)} after re-planning, recovery {recovered.group(3)} s, first step "
              f"after it {recovery_s:.1f} s after the kill (< {timeout_s / 2:.0f} s); steps "
              f"{failed_step}-{steps} of the survivors against the reference: largest relative "
              f"difference {worst:.1e} {'<=' if worst <= 1e-6 else '>'} 1e-06, steps missing "
              f"{missing}")
        return 0 if ok else 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


sys.exit(main())
