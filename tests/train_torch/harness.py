"""Runs mixccl.train jobs for the tests: the single-process reference and a plan under torchrun
or mixcclrun, each bounded in time; a job that overruns is killed with its whole process group
(start_new_session), so no rank outlives its test."""
import json
import os
import signal
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TIMEOUT_S = 200  # one launch; generous: 2-6 ranks start torch on a shared 2-core machine


def run(cmd, timeout=TIMEOUT_S, env=None):
    """(exit status, combined output) of cmd; the output is echoed for the test log."""
    e = dict(os.environ, **(env or {}))
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         env=e, start_new_session=True)
    try:
        out, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        out += f"\n[harness] killed after {timeout} s\n"
    sys.stdout.write(out)
    sys.stdout.flush()
    return p.returncode, out


def train_args(spec, steps, report, extra=()):
    return ["-m", "mixccl.train", "--model-spec", spec, "--steps", str(steps), "--threads", "1",
            "--timeout", "30", "--quiet", "--report", report, *extra]


def single(spec, steps, report, micro_batches=1, extra=()):
    return run([sys.executable, *train_args(spec, steps, report,
                                            ["--micro-batches", str(micro_batches), *extra])])


def torchrun(plan, nranks, spec, steps, report, extra=()):
    return run([sys.executable, "-m", "torch.distributed.run", "--standalone",
                "--nproc-per-node", str(nranks), *train_args(spec, steps, report,
                                                             ["--plan", plan, *extra])])


def mixcclrun(mixcclrun_path, adaptors, plan, spec, steps, report, extra=()):
    return run([mixcclrun_path, "--adaptors", adaptors, sys.executable,
                *train_args(spec, steps, report, ["--plan", plan, *extra])])


def srun(plan, nranks, spec, steps, report, extra=()):
    """Under Slurm's srun (tests/slurm/local_slurm.py provides a cluster): ranks from SLURM_PROCID
    and SLURM_NTASKS, the store at MASTER_ADDR:MASTER_PORT as torchrun's."""
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return run(["srun", "--ntasks", str(nranks), "--kill-on-bad-exit=1",
                f"--export=ALL,MASTER_ADDR=127.0.0.1,MASTER_PORT={port}", sys.executable,
                *train_args(spec, steps, report, ["--plan", plan, *extra])])


def launch(launcher, plan, nranks, spec, steps, report, extra=()):
    """launcher: ["torchrun"], ["srun"] or ["mixcclrun", PATH, ADAPTORS] (one adaptor list per
    rank)."""
    if launcher[0] == "torchrun":
        return torchrun(plan, nranks, spec, steps, report, extra)
    if launcher[0] == "srun":
        return srun(plan, nranks, spec, steps, report, extra)
    return mixcclrun(launcher[1], launcher[2], plan, spec, steps, report, extra)


def losses(report):
    with open(report) as f:
        return [s["loss"] for s in json.load(f)["steps"]]


def plan_micro_batches(plan):
    with open(plan) as f:
        return json.load(f)["micro_batches"]


def workdir():
    return tempfile.mkdtemp(prefix="mixccl-train-test-")
