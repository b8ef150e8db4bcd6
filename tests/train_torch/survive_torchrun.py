"""Under torchrun a lost worker ends every worker (its elastic agent stops the group) and, with
--max-restarts, the agent starts them all again: with --checkpoint DIR --checkpoint-every K
--auto-resume they go on from the last checkpoint. A 2-stage pipeline checkpoints every EVERY
steps; rank 1 is killed with SIGKILL once rank 0 has printed step KILL; the restarted job must
resume from the checkpoint and finish, with the losses of an uninterrupted run of the plan
from there on (under mixcclrun, which starts faster: the same backend and operations).

  survive_torchrun.py SPEC PLAN STEPS KILL EVERY MIXCCLRUN"""
import os
import re
import shutil
import sys

import harness
import survive_job


def main():
    spec, plan, steps, kill_after, every, mixcclrun = sys.argv[1:7]
    steps, kill_after, every = int(steps), int(kill_after), int(every)
    tmp = harness.workdir()
    try:
        report = os.path.join(tmp, "job.json")
        torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone",
                    "--nproc-per-node", "2", "--monitor-interval", "0.2"]
        # Rank 0's lines only, unprefixed (the worker's own output).
        train = ["-m", "mixccl.train", "--model-spec", spec, "--plan", plan, "--steps",
                 str(steps), "--threads", "1", "--timeout", "30"]
        rc, text, killed = survive_job.run_and_kill(
            torchrun + ["--max-restarts", "1", "--local-ranks-filter", "0", *train,
                        "--checkpoint", os.path.join(tmp, "ckpt"), "--checkpoint-every",
                        str(every), "--auto-resume", "--report", report],
            kill_after, 1, variable="RANK", step_line=r"(\[\S+\]:)?step +")
        resumed = re.search(r"mixccl.train: --auto-resume: every rank resumes from the "
                            r"checkpoint of step (\d+)", text)
        if rc != 0 or not killed or not resumed:
            print(f"survive_torchrun: the job exited {rc}, killed {killed}, resume line "
                  f"{'found' if resumed else 'missing'}")
            return 1
        back_to = int(resumed.group(1))
        ref_report = os.path.join(tmp, "reference.json")
        rc, _ = harness.run([mixcclrun, "--adaptors", "host:2", sys.executable, *train,
                             "--quiet", "--report", ref_report])
        if rc != 0:
            print(f"survive_torchrun: the reference run exited {rc}")
            return 1
        worst, missing, _ = survive_job.compare(report, ref_report, back_to + 1, steps)
        ok = worst <= 1e-6 and missing == list(range(1, back_to + 1))
        print(f"survive_torchrun: rank 1 killed after step {kill_after} of {steps}, the agent "
              f"restarted the job, it resumed from step {back_to}; steps {back_to + 1}-{steps} "
              f"against the uninterrupted run: largest relative difference {worst:.1e} "
              f"{'<=' if worst <= 1e-6 else '>'} 1e-06, steps it reported "
              f"{back_to + 1}-{steps}: {missing == list(range(1, back_to + 1))}")
        return 0 if ok else 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


sys.exit(main())
