"""A pipeline that loses its only copy of some layers finishes (--survive with --checkpoint-every):
a 3-stage pipeline (types fast, slow, slow; host and gloo adaptors) checkpoints every EVERY steps
under `mixcclrun --keep-going`; the last stage is killed with SIGKILL once rank 0 has printed
step KILL. No survivor holds its layers, so the survivors re-plan for fast, slow, roll every
rank back to the checkpoint (the lost rank's file included) and finish. Then a run of the
survivors' plan resumed from that checkpoint's state (the recovery's checkpoint) must give the
same losses from the step after the checkpoint on, within fp32 rounding. The survivors must
finish their first step after the recovery within half the job's --timeout of the kill: the
stage upstream of the lost one is released by its neighbour's revoke, not by its own timeout.

  survive_stage.py SPEC PLAN CLUSTER STEPS KILL EVERY MIXCCLRUN PLANNER ADAPTORS REFERENCE_ADAPTORS"""
import os
import re
import shutil
import sys

import harness
import survive_job


def main():
    (spec, plan, cluster, steps, kill_after, every, mixcclrun, planner, adaptors,
     ref_adaptors) = sys.argv[1:11]
    steps, kill_after, every = int(steps), int(kill_after), int(every)
    victim = 2
    timeout_s = 30
    tmp = harness.workdir()
    try:
        survive_dir = os.path.join(tmp, "survive")
        report = os.path.join(tmp, "job.json")
        times = {}
        rc, text, killed = survive_job.run_and_kill(
            [mixcclrun, "--keep-going", "--adaptors", adaptors, sys.executable, "-m",
             "mixccl.train", "--model-spec", spec, "--plan", plan, "--cluster", cluster,
             "--survive", survive_dir, "--planner", planner, "--steps", str(steps),
             "--checkpoint", os.path.join(tmp, "checkpoints"), "--checkpoint-every", str(every),
             "--threads", "1", "--timeout", str(timeout_s), "--report", report], kill_after,
            victim, times=times)
        recovered = re.search(rf"\[0\] mixccl.train: lost rank\(s\) {victim} in step (\d+): 2 "
                              r"ranks go on with \S+ \(micro-batches ([0-9,]+)\)", text)
        rolled = re.search(r"\[0\] mixccl.train: no survivor held .* every rank rolled back to "
                           r"the checkpoint of step (\d+) in \S+; (steps \d+-\d+ are done again|"
                           r"no finished step is lost) \(with the failed step (\d+)\)", text)
        if rc != 0 or not killed or not recovered or not rolled:
            print(f"survive_stage: the job exited {rc}, killed {killed}, recovery line "
                  f"{'found' if recovered else 'missing'}, roll-back line "
                  f"{'found' if rolled else 'missing'}")
            return 1
        # The victim may finish a step or two after rank 0 printed step KILL (the kill comes
        # through two pipes): the checkpoint is the last one before the failed step.
        back_to, failed = int(rolled.group(1)), int(rolled.group(3))
        if back_to != (failed - 1) // every * every or int(recovered.group(1)) != failed:
            print(f"survive_stage: rolled back to step {back_to} after failing in step "
                  f"{failed}: expected the checkpoint of step {(failed - 1) // every * every}")
            return 1
        checked = survive_job.check_recovery_and_reference(
            "survive_stage", times, timeout_s, mixcclrun, ref_adaptors, spec, survive_dir, steps,
            tmp, report, back_to + 1)
        if checked is None:
            return 1
        recovery_s, worst, missing, ok = checked
        print(f"survive_stage: rank {victim} lost in step {recovered.group(1)} of {steps}, "
              f"micro-batches {recovered.group(2)} after re-planning, rolled back to the "
              f"checkpoint before it (step {back_to}: {rolled.group(2)}), first step after "
              f"the recovery {recovery_s:.1f} s after the kill (< {timeout_s / 2:.0f} s); steps "
              f"{back_to + 1}-{steps} of the survivors against the reference: largest relative "
              f"difference {worst:.1e} {'<=' if worst <= 1e-6 else '>'} 1e-06, steps missing "
              f"{missing}")
        return 0 if ok else 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


sys.exit(main())
