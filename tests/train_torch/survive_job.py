"""The parts the --survive tests share (mixccl.train's here, mixccl-train's in
train/tests/survive_test.py): run a job under `mixcclrun --keep-going`, kill one rank with
SIGKILL once rank 0 has printed step K, and compare the survivors' losses with a reference
run's."""
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


def run_and_kill(cmd, kill_after, victim, variable="MIXCCL_RANK", step_line=r"\[0\] step +",
                 times=None, timeout_s=None):
    """(exit status, output, whether the victim was killed) of the job `cmd`; its output is
    echoed. `step_line` is how the launcher shows rank 0's progress lines (a regex). A job that
    hangs is killed with its process group after timeout_s (harness.TIMEOUT_S by default).
    `times`, a dict, gets "killed" (time.monotonic() at the kill) and "lines"
    ([(time.monotonic(), line)] as each line arrived), for recovery_seconds."""
    job = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           start_new_session=True)
    out = []
    killed_at, pid = None, None
    watchdog = threading.Timer(timeout_s or harness.TIMEOUT_S, os.killpg,
                               (job.pid, signal.SIGKILL))
    watchdog.start()
    try:
        for line in job.stdout:  # a killed job's output ends, which ends the loop
            out.append(line)
            if times is not None:
                times.setdefault("lines", []).append((time.monotonic(), line))
            sys.stdout.write(line)
            if killed_at is not None or not re.match(rf"{step_line}\d+/", line):
                continue
            # The victim is found at the first step line, so that the kill itself is one system
            # call: mixccl-train's steps take a few milliseconds, and a loaded machine must not
            # let the job end between the step line and the kill.
            if pid is None:
                pid = rank_pid(job.pid, victim, variable)
            if re.match(rf"{step_line}{kill_after}/", line):
                os.kill(pid, signal.SIGKILL)
                killed_at = time.monotonic()
                if times is not None:
                    times["killed"] = killed_at
        job.wait()
    finally:
        watchdog.cancel()
    return job.returncode, "".join(out), killed_at is not None


def recovery_seconds(times):
    """Seconds from the kill to the first step line after the recovery line (the first step the
    survivors finished after the recovery), from run_and_kill's `times`; None without one."""
    recovered = False
    for t, line in times.get("lines", []):
        if re.match(r"\[\d+\] mixccl.train: lost rank", line):
            recovered = True
        elif recovered and re.match(r"\[\d+\] step +\d+/", line) and "killed" in times:
            return t - times["killed"]
    return None


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


def check_recovery_and_reference(name, times, timeout_s, mixcclrun, ref_adaptors, spec,
                                 survive_dir, steps, tmp, report, first):
    """What every survive test checks after the recovery line: the survivors' first step after
    the recovery came within half the --timeout of the kill, and their steps first..steps equal
    a job of the survivors' plan resumed from recovery-1. Returns (seconds from the kill to that
    step, largest relative difference, the job's missing steps, whether the difference is within
    1e-6 and nothing is missing), or None after printing why (name starts the line)."""
    recovery_s = recovery_seconds(times)
    if recovery_s is None or recovery_s >= timeout_s / 2:
        print(f"{name}: the survivors' first step after the recovery came "
              f"{'never' if recovery_s is None else f'{recovery_s:.1f} s after the kill'}: "
              f"expected under {timeout_s / 2:.0f} s (half the --timeout)")
        return None
    ref_report = os.path.join(tmp, "reference.json")
    rc = run_reference(mixcclrun, ref_adaptors, spec, os.path.join(survive_dir, "recovery-1"),
                       steps, ref_report)
    if rc != 0:
        print(f"{name}: the reference run exited {rc}")
        return None
    worst, missing, ref_ok = compare(report, ref_report, first, steps)
    return recovery_s, worst, missing, worst <= 1e-6 and not missing and ref_ok
