"""The parts the --survive tests share: run a job under `mixcclrun --keep-going`, kill one rank
with SIGKILL once rank 0 has printed step K, and compare the survivors' losses with a
reference run's."""
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

import harness


def rank_pid(launcher_pid, rank, variable="MIXCCL_RANK"):
    """The pid of the launcher's child that runs `rank` (`variable` in its environment)."""
    with open(f"/proc/{launcher_pid}/task/{launcher_pid}/children") as f:
        for pid in f.read().split():
            try:
                with open(f"/proc/{pid}/environ", "rb") as e:
                    if f"{variable}={rank}".encode() in e.read().split(b"\0"):
                        return int(pid)
            except OSError:
                pass
    return None


def run_and_kill(cmd, kill_after, victim, variable="MIXCCL_RANK", step_line=r"\[0\] step +"):
    """(exit status, output, whether the victim was killed) of the job `cmd`; its output is
    echoed. `step_line` is how the launcher shows rank 0's progress lines (a regex). A job that
    hangs is killed with its process group after harness.TIMEOUT_S."""
    job = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           start_new_session=True)
    out = []
    killed_at = None
    watchdog = threading.Timer(harness.TIMEOUT_S, os.killpg, (job.pid, signal.SIGKILL))
    watchdog.start()
    try:
        for line in job.stdout:  # a killed job's output ends, which ends the loop
            out.append(line)
            sys.stdout.write(line)
            if killed_at is None and re.match(rf"{step_line}{kill_after}/", line):
                os.kill(rank_pid(job.pid, victim, variable), signal.SIGKILL)
                killed_at = time.monotonic()
        job.wait()
    finally:
        watchdog.cancel()
    return job.returncode, "".join(out), killed_at is not None


def losses(report):
    with open(report) as f:
        return {s["step"]: s["loss"] for s in json.load(f)["steps"]}


def compare(job_report, ref_report, first, steps):
    """(largest relative difference over steps first..steps, the job's missing steps, whether
    the reference has exactly those steps); prints both runs' losses."""
    job_steps, ref_steps = losses(job_report), losses(ref_report)
    worst = 0.0
    for s in range(first, steps + 1):
        a, b = job_steps.get(s), ref_steps.get(s)
        print(f"step {s}: survivors {a!r} reference {b!r}")
        if a is None or b is None:
            worst = float("inf")
        else:
            worst = max(worst, abs(a - b) / abs(b))
    missing = [s for s in range(1, steps + 1) if s not in job_steps]
    return worst, missing, sorted(ref_steps) == list(range(first, steps + 1))


def run_reference(mixcclrun, adaptors, spec, recovery_dir, steps, report):
    """The reference a recovered job must equal: a job of the survivors' plan resumed from the
    recovery's checkpoint (recovery_dir: DIR/recovery-K). Returns its exit status."""
    rc, _ = harness.run([mixcclrun, "--adaptors", adaptors, sys.executable, "-m", "mixccl.train",
                         "--model-spec", spec, "--plan", os.path.join(recovery_dir, "plan.json"),
                         "--resume", recovery_dir, "--steps", str(steps), "--threads", "1",
                         "--timeout", "20", "--quiet", "--report", report])
    return rc
