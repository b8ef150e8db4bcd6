"""mixccl-train --survive: a job of three one-stage replicas (micro-batches 4, 4, 2 on device
types fast, fast, slow) under `mixcclrun --keep-going` loses rank 1 (kill -9 once rank 0 printed
step K). The survivors must shrink, re-plan for the devices left (the global batch kept), take
the state from the surviving replicas and finish. Two references: the same job without a
kill, stopped at the step the survivors went on from with --checkpoint, whose state the
recovery's checkpoints must equal byte for byte (a one-stage replica's checkpoint is the whole
model); and a job of the survivors' plan resumed from the recovery's checkpoint, whose losses
the survivors' must equal within 1e-6 relative. Prints the time from the kill to the
survivors' next step.

  survive_test.py replica MIXCCLRUN MIXCCL_TRAIN PLAN CLUSTER ADAPTORS SURVIVOR_ADAPTORS [STEPS K]

With `stage` instead of `replica` (and no SURVIVOR_ADAPTORS), PLAN is one pipeline whose last
stage, rank 1, is killed: no survivor holds its layers, and rank 0 must stop with the message
that names them instead of hanging.

  survive_test.py stage MIXCCLRUN MIXCCL_TRAIN PLAN CLUSTER ADAPTORS"""
import os
import re
import shutil
import sys
import tempfile

# The kill, the pid lookup and the loss comparison are those of mixccl.train's survive tests.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests",
                                "train_torch"))
import harness  # noqa: E402
import survive_job  # noqa: E402

TIMEOUT_S = 60
VICTIM = 1
MODEL = ["--layers", "2", "--channels", "32", "--heads", "4", "--seq-len", "16"]


def run(cmd, kill_after=None):
    """(exit status, output, seconds from the kill to the next step line or None), the kill
    after step kill_after as survive_job.run_and_kill does it for mixccl.train's tests."""
    if kill_after is None:
        rc, out = harness.run(cmd, timeout=TIMEOUT_S)
        return rc, out, None
    times = {}
    rc, out, killed = survive_job.run_and_kill(cmd, kill_after, VICTIM, times=times,
                                               timeout_s=TIMEOUT_S)
    if killed:
        for t, line in times["lines"]:
            step = re.match(r"\[0\] step +(\d+)/", line)
            if step and int(step.group(1)) > kill_after and t >= times["killed"]:
                return rc, out, t - times["killed"]
    return rc, out, None


def lost_stage(mixcclrun, trainer, plan, cluster, adaptors):
    tmp = tempfile.mkdtemp(prefix="mixccl-train-survive-")
    try:
        rc, text, _ = run([mixcclrun, "--keep-going", "--adaptors", adaptors, trainer, *MODEL,
                           "--plan", plan, "--cluster", cluster, "--survive",
                           os.path.join(tmp, "survive"), "--steps", "100"], 4)
        stopped = re.search(r"\[0\] mixccl-train: no survivor holds block1\.ln1_w, block1\.ln1_b, "
                            r"block1\.qkv_w, block1\.qkv_b, \.\.\. at step \d+ \(a pipeline lost "
                            r"its only copy of these layers\): mixccl-train cannot go on; restart "
                            r"the job from its last checkpoint with --resume\n", text)
        exited = re.search(r"mixcclrun: rank 0 \(pid \d+\) exited with status 1", text)
        print(f"survive: the job exited {rc}; the lost layers' message "
              f"{'printed' if stopped else 'missing'}; rank 0 {'exited 1' if exited else 'did not exit 1'}")
        return 0 if rc != 0 and stopped and exited else 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    if sys.argv[1] == "stage":
        return lost_stage(*sys.argv[2:7])
    mixcclrun, trainer, plan, cluster, adaptors, survivor_adaptors = sys.argv[2:8]
    # 100 steps of a few milliseconds each: the kill after step 5 lands long before the end,
    # even when this script is scheduled late on a loaded machine (at 12 steps the job could end
    # first).
    steps = int(sys.argv[8]) if len(sys.argv) > 8 else 100
    kill_after = int(sys.argv[9]) if len(sys.argv) > 9 else 5
    tmp = tempfile.mkdtemp(prefix="mixccl-train-survive-")
    try:
        survive = os.path.join(tmp, "survive")
        report, ref_report = os.path.join(tmp, "job.json"), os.path.join(tmp, "reference.json")
        rc, text, to_next = run([mixcclrun, "--keep-going", "--adaptors", adaptors, trainer, *MODEL,
                                 "--plan", plan, "--cluster", cluster, "--survive", survive,
                                 "--steps", str(steps), "--report", report], kill_after)
        recovered = re.search(r"\[0\] mixccl-train: lost rank\(s\) (\d+) in step (\d+): 2 ranks go "
                              r"on with \S+ \(micro-batches ([0-9,]+)\); recovery ([0-9.]+) s", text)
        if rc != 0 or to_next is None or not recovered or recovered.group(1) != str(VICTIM):
            print(f"survive: the job exited {rc}, next step after the kill "
                  f"{'seen' if to_next is not None else 'not seen'}, recovery line "
                  f"{'naming rank ' + recovered.group(1) if recovered else 'missing'}")
            return 1
        failed_step = int(recovered.group(2))
        recovery = os.path.join(survive, "recovery-1")
        before = os.path.join(tmp, "before")
        rc, _, _ = run([mixcclrun, "--adaptors", adaptors, trainer, *MODEL, "--plan", plan,
                        "--steps", str(failed_step - 1), "--quiet", "--checkpoint", before])
        if rc != 0:
            print(f"survive: the uninterrupted job to step {failed_step - 1} exited {rc}")
            return 1
        with open(before + ".rank0", "rb") as f:
            state = f.read()
        differ = []
        for r in range(2):
            with open(os.path.join(recovery, f"ckpt.rank{r}"), "rb") as f:
                if f.read() != state:
                    differ.append(r)
        if differ:
            print(f"survive: the recovery's checkpoint of survivor(s) {differ} differs from the "
                  f"uninterrupted job's state at step {failed_step - 1}")
            return 1
        rc, _, _ = run([mixcclrun, "--adaptors", survivor_adaptors, trainer, *MODEL, "--plan",
                        os.path.join(recovery, "plan.json"), "--resume",
                        os.path.join(recovery, "ckpt"), "--steps", str(steps), "--quiet",
                        "--report", ref_report])
        if rc != 0:
            print(f"survive: the reference run exited {rc}")
            return 1
        worst, missing, ref_ok = survive_job.compare(report, ref_report, failed_step, steps)
        ok = worst <= 1e-6 and not missing and ref_ok
        print(f"survive: rank {VICTIM} lost in step {failed_step} of {steps}, micro-batches "
              f"{recovered.group(3)} after re-planning, recovery {recovered.group(4)} s, kill to "
              f"the next step {to_next * 1e3:.0f} ms; state at step {failed_step - 1} equal to the "
              f"uninterrupted job's; steps {failed_step}-{steps} against the reference: "
              f"largest relative difference {worst:.1e} {'<=' if worst <= 1e-6 else '>'} 1e-06, "
              f"steps missing {missing}{'' if ref_ok else ', the reference has other steps'}")
        return 0 if ok else 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


sys.exit(main())
