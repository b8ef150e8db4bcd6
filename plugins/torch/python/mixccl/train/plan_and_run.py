"""`--plan-and-run`: profile this model here (--profile-out, or a file next to --report), plan
it with `mixccl-plan --profile` for the cluster spec, and run the planner's first plan as a job
of local ranks started here (torchrun's environment: RANK, WORLD_SIZE, LOCAL_RANK,
MASTER_ADDR/PORT on a free port), passing on the training options."""
import os
import shutil
import signal
import socket
import subprocess
import sys

from .profiler import write_profile
from .spec import InputError


def find_planner(path):
    found = path or shutil.which("mixccl-plan")
    if not found or not os.access(found, os.X_OK):
        raise InputError("--plan-and-run needs mixccl-plan: give --planner PATH (it is "
                         "build/train/mixccl-plan in a build tree) or put it on PATH")
    return found


def plan_and_run(spec, args, argv):
    if not args.cluster:
        raise InputError("--plan-and-run needs --cluster CLUSTER.json")
    planner = find_planner(args.planner)
    work = args.work_dir or "."
    os.makedirs(work, exist_ok=True)
    if not args.profile_out:
        args.profile_out = os.path.join(work, "profile.json")
    write_profile(spec, args)
    plan_path = os.path.join(work, "plan.json")
    cmd = [planner, "--model", args.model_spec, "--cluster", args.cluster, "--profile",
           args.profile_out, "--json"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise InputError(f"{' '.join(cmd)} failed (exit {proc.returncode}): "
                         f"{proc.stderr.strip()}")
    with open(plan_path, "w") as f:
        f.write(proc.stdout)
    from .plan import load_plan
    plan = load_plan(plan_path)
    print(f"mixccl.train: wrote {plan_path}: {plan.num_ranks} ranks", flush=True)
    # The training options pass on; the planning ones do not.
    drop_flags = {"--plan-and-run"}
    drop_values = {"--profile-out", "--planner", "--work-dir", "--profile-micro-batches",
                   "--profile-repeats"}
    rest, i = [], 0
    while i < len(argv):
        a = argv[i]
        key = a.split("=", 1)[0]
        if key in drop_flags:
            i += 1
        elif key in drop_values:
            i += 1 if "=" in a else 2
        else:
            rest.append(a)
            i += 1
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = []
    for r in range(plan.num_ranks):
        env = dict(os.environ, RANK=str(r), WORLD_SIZE=str(plan.num_ranks), LOCAL_RANK=str(r),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        for k in ("MIXCCL_RANK", "MIXCCL_NRANKS", "MIXCCL_COMM_ID"):
            env.pop(k, None)
        procs.append(subprocess.Popen([sys.executable, "-m", "mixccl.train", *rest, "--plan",
                                       plan_path], env=env, start_new_session=True))
    # Wait for all; a failed rank ends the job (the others would fail within --timeout anyway).
    status = 0
    try:
        pending = list(enumerate(procs))
        while pending:
            for item in list(pending):
                r, p = item
                try:
                    rc = p.wait(timeout=0.2)
                except subprocess.TimeoutExpired:
                    continue
                pending.remove(item)
                if rc != 0 and status == 0:
                    status = rc
                    print(f"mixccl.train: rank {r} exited with status {rc}; ending the job",
                          file=sys.stderr, flush=True)
                    for _, q in pending:
                        os.killpg(q.pid, signal.SIGTERM)
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
    return 1 if status else 0
