#!/usr/bin/env python3
"""Runs one command inside a private one-node Slurm cluster, so srun launches can be tested on a
machine without a cluster:

    local_slurm.py [--timeout S] -- COMMAND ...

It writes a slurm.conf into a fresh folder (this host as the only node, its CPUs, two free
ports on 127.0.0.1, no authentication: auth/none and cred/none, which a real cluster must never
use, fine for a cluster nobody else can reach because it lives for one command), starts
slurmctld and slurmd in the foreground, waits until the node is idle, runs COMMAND with
SLURM_CONF pointing at the file (so its srun, sinfo, squeue use this cluster), then cancels
what is left, stops both daemons and removes the folder. Exit status: COMMAND's; 2 when the
cluster did not come up (the daemons' logs are printed), 124 when COMMAND ran past --timeout.
Needs slurmctld, slurmd and srun (Debian: slurmctld slurmd slurm-client; scripts/setup.sh)."""
import argparse
import getpass
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

UP_TIMEOUT_S = 30


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_conf(folder, node):
    ctld_port = free_port()
    slurmd_port = free_port()
    while slurmd_port == ctld_port:
        slurmd_port = free_port()
    user = getpass.getuser()
    conf = os.path.join(folder, "slurm.conf")
    with open(conf, "w") as f:
        f.write(f"""ClusterName=mixccltest
SlurmctldHost={node}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
AuthType=auth/none
CredType=cred/none
SlurmUser={user}
SlurmdUser={user}
StateSaveLocation={folder}/state
SlurmdSpoolDir={folder}/spool
SlurmctldPidFile={folder}/slurmctld.pid
SlurmdPidFile={folder}/slurmd.pid
SlurmctldLogFile={folder}/slurmctld.log
SlurmdLogFile={folder}/slurmd.log
ProctrackType=proctrack/pgid
TaskPlugin=task/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
ReturnToService=2
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
NodeName={node} NodeAddr=127.0.0.1 CPUs={os.cpu_count()} State=UNKNOWN
PartitionName=local Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:64
""")
    os.makedirs(os.path.join(folder, "state"))
    os.makedirs(os.path.join(folder, "spool"))
    return conf


def node_idle(env):
    r = subprocess.run(["sinfo", "-h", "-o", "%T"], env=env, capture_output=True, text=True)
    return r.returncode == 0 and r.stdout.strip() == "idle"


def stop(procs, env):
    subprocess.run(["scancel", "--full", "--partition", "local"], env=env, capture_output=True)
    for p in procs:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGTERM)
    deadline = time.time() + 10
    for p in procs:
        try:
            p.wait(timeout=max(0.1, deadline - time.time()))
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def print_logs(folder):
    for name in ("slurmctld.log", "slurmd.log"):
        path = os.path.join(folder, name)
        if os.path.exists(path):
            print(f"local_slurm: --- {name} ---")
            with open(path) as f:
                print("".join(f.readlines()[-20:]), end="")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("command", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        ap.error("no COMMAND")
    for tool in ("slurmctld", "slurmd", "srun", "sinfo", "scancel"):
        if not shutil.which(tool):
            print(f"local_slurm: {tool} not found (Debian: apt-get install slurmctld slurmd "
                  f"slurm-client; scripts/setup.sh installs them)")
            return 2
    folder = tempfile.mkdtemp(prefix="mixccl-slurm-")
    node = socket.gethostname().split(".")[0]
    conf = write_conf(folder, node)
    env = dict(os.environ, SLURM_CONF=conf)
    # Each daemon in its own session, so that stopping it reaches whatever it started.
    procs = [subprocess.Popen(["slurmctld", "-D", "-f", conf], env=env, start_new_session=True,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
             subprocess.Popen(["slurmd", "-D", "-f", conf, "-N", node], env=env,
                              start_new_session=True, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)]
    try:
        deadline = time.time() + UP_TIMEOUT_S
        while not node_idle(env):
            if time.time() > deadline or any(p.poll() is not None for p in procs):
                print(f"local_slurm: the cluster in {folder} did not come up within "
                      f"{UP_TIMEOUT_S} s")
                print_logs(folder)
                return 2
            time.sleep(0.2)
        print(f"local_slurm: node {node} idle ({os.cpu_count()} CPUs); running "
              f"{' '.join(command)}", flush=True)
        job = subprocess.Popen(command, env=env, start_new_session=True)
        try:
            rc = job.wait(timeout=args.timeout)
        except subprocess.TimeoutExpired:
            os.killpg(job.pid, signal.SIGKILL)
            job.wait()
            print(f"local_slurm: the command ran past {args.timeout:g} s and was killed")
            rc = 124
        print(f"local_slurm: the command exited with {rc}", flush=True)
        return rc
    finally:
        stop(procs, env)
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
