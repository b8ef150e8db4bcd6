"""The part the --allow-grow tests share: a job under mixcclrun, and a replacement (--join)
started once rank 0 has printed step K. The tiny job's steps take milliseconds and starting
torch takes seconds, so the job's ranks are held (SIGSTOP) from step K until the joiner has
asked to join or has exited, then let go (SIGCONT): as a real job's steps would outlast the
joiner's start. The job takes the joiner at the boundary after the step it was in. The tests
give --timeout 60: a rank held in a collective must not count the hold as a stuck peer."""
import os
import re
import signal
import subprocess
import sys
import threading

import harness
import survive_job


def train_args(spec, cluster, planner, steps):
    """The mixccl.train options the job and the joiner share: one thread each, and --timeout 60
    so that a rank held in a collective does not count the hold as a stuck peer."""
    return ["--model-spec", spec, "--cluster", cluster, "--planner", planner, "--steps",
            str(steps), "--threads", "1", "--timeout", "60"]


def _ranks(launcher_pid):
    with open(f"/proc/{launcher_pid}/task/{launcher_pid}/children") as f:
        return [int(p) for p in f.read().split()]


def _signal_all(pids, sig):
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def run_with_joiner(job_cmd, joiner_cmd, after_step, victim=None,
                    asked=r"mixccl.train: --join \S+: asked"):
    """(job's exit status, its output, joiner's exit status, its output); both are echoed, and
    both are killed with their process groups after harness.TIMEOUT_S. With `victim`, that rank
    is killed with SIGKILL once rank 0 has printed step `after_step`, and the joiner starts at
    the first step rank 0 prints after the survivors' recovery."""
    job = subprocess.Popen(job_cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           start_new_session=True)
    started = []
    joiner_out = []

    def kill_all():
        for p in [job] + started:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    watchdog = threading.Timer(harness.TIMEOUT_S, kill_all)
    watchdog.start()
    out = []
    recovered = killed = False
    try:
        for line in job.stdout:
            out.append(line)
            sys.stdout.write(line)
            step_line = re.match(r"\[0\] step +(\d+)/", line)
            if (victim is not None and not killed and step_line
                    and int(step_line.group(1)) == after_step):
                os.kill(survive_job.rank_pid(job.pid, victim), signal.SIGKILL)
                killed = True
            recovered = recovered or "mixccl.train: lost rank(s)" in line
            if not started and step_line and (int(step_line.group(1)) == after_step
                                              if victim is None else recovered):
                held = _ranks(job.pid)
                _signal_all(held, signal.SIGSTOP)
                joiner = subprocess.Popen(joiner_cmd, stdout=subprocess.PIPE,
                                          stderr=subprocess.STDOUT, text=True,
                                          start_new_session=True)
                started.append(joiner)
                ready = threading.Event()

                def read_joiner(joiner=joiner, ready=ready):
                    for jl in joiner.stdout:
                        joiner_out.append(jl)
                        if re.search(asked, jl):
                            ready.set()
                    ready.set()  # it exited
                reader = threading.Thread(target=read_joiner)
                reader.start()
                ready.wait()
                _signal_all(held, signal.SIGCONT)
        job.wait()
        if started:
            started[0].wait()
            reader.join()
    finally:
        watchdog.cancel()
    joiner_text = "".join(joiner_out)
    sys.stdout.write("".join(f"[joiner] {jl}" for jl in joiner_out))
    return (job.returncode, "".join(out), started[0].returncode if started else None,
            joiner_text)
