"""`--join DIR`: this process is a replacement rank for the job whose `--survive DIR` it names
(docs/reliability.md, "A replacement joins"). It reads DIR/job.json for the job's store, asks
there to join with its device type (`--device-type`) and the options that must match the
job's, and waits for rank 0's answer, which the job gives at its next step boundary (grow.py):
its rank, the grown world's size and plan, or the reason it is refused. Its adaptor is its own
(MIXCCL_ADAPTOR, from mixcclrun --adaptors or set by hand), its device from --device-map.
Everything slow (torch, the backend) is loaded before asking, so the job waits little."""
import json
import os
import socket
import time

from .grow import PREFIX, form_group, finish_join, settings
from .grow_store import open_store, read_job_file
from .pipeline import PeerFailed
from .plan import parse_plan
from .spec import InputError

_POLL_S = 0.05


def check_options(args):
    if not args.join:
        return
    for flag, given in (("--plan", args.plan), ("--resume", args.resume),
                        ("--auto-resume", args.auto_resume), ("--profile-out", args.profile_out),
                        ("--plan-and-run", args.plan_and_run)):
        if given:
            raise InputError(f"--join takes its plan and state from the job: it does not go "
                             f"with {flag}")
    if not (args.cluster and args.device_type):
        raise InputError("--join needs --cluster CLUSTER.json and --device-type TYPE (this "
                         "rank's device type in it, which the job re-plans with)")
    if args.survive and os.path.abspath(args.survive) != os.path.abspath(args.join):
        raise InputError(f"--join {args.join} is the job's --survive DIR: give the same "
                         f"folder or leave --survive out")
    # The joined rank is a rank of the job like any other: it survives and grows with it.
    args.survive, args.allow_grow = args.join, True


class Joined:
    """The job's answer: what the joiner's Trainer takes in place of the launcher's rank and
    size, --plan, the process group and --resume."""

    def __init__(self, answer, store, timeout_s):
        self.rank, self.world, self.epoch = answer["rank"], answer["world"], answer["epoch"]
        self.plan = parse_plan(answer["plan_json"], answer["plan"])
        self.answer, self.store, self.timeout_s = answer, store, timeout_s

    def init_process_group(self):
        form_group(self.epoch, self.rank, self.world, self.timeout_s, self.store)
        return None  # the store is the job's: this rank never removes it

    def take_state(self, trainer):
        trainer.recoveries = self.answer["recoveries"]
        trainer.join_tickets = self.answer["join_tickets"]
        finish_join(trainer, {}, -1, os.path.dirname(self.answer["plan"]), self.epoch)
        if trainer.step != self.answer["step"]:
            raise PeerFailed(f"rank {self.rank}: the state taken at the join is of step "
                             f"{trainer.step}, the job answered at step {self.answer['step']}")


def _wait_for_job(folder, deadline):
    while True:
        job = read_job_file(folder)
        if job is not None:
            return job
        if time.monotonic() > deadline:
            raise InputError(f"--join {folder}: no job there (no {folder}/job.json; a job run "
                             "with --survive DIR writes it once its process group formed)")
        time.sleep(_POLL_S)


def _refuse_if_closed(folder, job):
    if job["state"] == "finished":
        raise InputError(f"--join {folder}: the job there has finished")
    if not job["allow_grow"]:
        raise InputError(f"--join {folder}: the job there runs without --allow-grow and takes "
                         f"no new ranks (start it with --survive {folder} --allow-grow)")


def request_to_join(args, spec):
    """Blocks until the job takes this rank (a Joined) or refuses it (InputError), at most
    --timeout seconds for each of the job's file and its answer."""
    import datetime

    # As runner.init_process_group: under mixcclrun its rendezvous address must go before
    # mixccl reads it (every communicator's id would be that one address).
    os.environ.pop("MIXCCL_COMM_ID", None)
    import mixccl.torch  # noqa: F401  loaded before asking: the job waits while this rank forms
    import torch
    # A process's first optimizer loads torch's compiler machinery (seconds): here, before
    # asking, not while the job waits in the grown group for this rank to build its stage.
    torch.optim.AdamW([torch.nn.Parameter(torch.zeros(1))])
    folder, timeout = args.join, args.timeout
    job = _wait_for_job(folder, time.monotonic() + timeout)
    _refuse_if_closed(folder, job)
    store = open_store(job["store"], datetime.timedelta(seconds=timeout))
    ticket = store.add(f"{PREFIX}/tickets", 1)
    store.set(f"{PREFIX}/request/{ticket}", json.dumps({
        "device_type": args.device_type, "host": socket.gethostname(), "pid": os.getpid(),
        "settings": settings(args, spec)}))
    key = f"{PREFIX}/answer/{ticket}"
    deadline = time.monotonic() + timeout
    print(f"mixccl.train: --join {folder}: asked to join as device type {args.device_type}; "
          "the job takes it at its next step boundary", flush=True)
    while not store.check([key]):
        job = read_job_file(folder) or job
        late = time.monotonic() > deadline
        if late or job["state"] == "finished":
            # Withdrawn, unless rank 0 answered in the meantime (compare_set: the first wins).
            if store.compare_set(key, "", "withdrawn") == b"withdrawn":
                _refuse_if_closed(folder, job)
                raise InputError(f"--join {folder}: the job did not take this rank within "
                                 f"--timeout {timeout:g} s (it looks for joiners after every "
                                 "step)")
            break
        time.sleep(_POLL_S)
    answer = json.loads(store.get(key))
    if "refused" in answer:
        raise InputError(f"--join {folder}: the job refused this rank: {answer['refused']}")
    print(f"mixccl.train: --join {folder}: joining as rank {answer['rank']} of "
          f"{answer['world']} after step {answer['step']}", flush=True)
    return Joined(answer, store, timeout)
