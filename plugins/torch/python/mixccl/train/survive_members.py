"""Who survived a failure: the survivors agree on the lost ranks through the job's store
(the one torch.distributed formed the world with), since the communicators cannot carry it.

Every survivor checks in under the recovery's prefix with its step; the first to check in
decides: a rank is lost when its process is known gone (a rank on this host whose pid no longer
runs) or when it has not checked in within `grace` seconds (every live rank learns of a failure
within the communication timeout). The decision (lost ranks, the survivors' steps) is written
once and read by all; a rank that checks in after it was written is not among the survivors."""
import json
import os
import socket
import time

import torch.distributed as dist

from .pipeline import PeerFailed

PREFIX = "mixccl.train/survive"


def job_store():
    return dist.distributed_c10d._get_default_store()


def announce(rank):
    """Before training: this rank's host and pid, so that a survivor on the same host can tell
    at once that its process is gone."""
    job_store().set(f"{PREFIX}/process/{rank}", json.dumps({"host": socket.gethostname(),
                                                            "pid": os.getpid()}))


def _process_gone(store, rank):
    try:
        info = json.loads(store.get(f"{PREFIX}/process/{rank}"))
    except Exception:  # noqa: BLE001  (never announced: not known gone)
        return False
    if info["host"] != socket.gethostname():
        return False
    try:
        with open(f"/proc/{info['pid']}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")  # a zombie is gone
    except OSError:
        return True


def note_failure(epoch, error):
    """Before this rank revokes its groups: the first survivor of recovery `epoch` to fail
    records its error for the report. The others fail after it (mostly by its revoke, whose
    message names it rather than the lost rank), so the first error is the one that says what
    happened."""
    store = job_store()
    if store.add(f"{PREFIX}/{epoch}/failed", 1) == 1:
        store.set(f"{PREFIX}/{epoch}/first-error", str(error))


def first_error(epoch, own_error):
    """The error note_failure recorded first in recovery `epoch` (this rank's own if none)."""
    store = job_store()
    key = f"{PREFIX}/{epoch}/first-error"
    return store.get(key).decode() if store.check([key]) else str(own_error)


def agree_on_survivors(epoch, rank, world, step, grace_s):
    """Returns (lost ranks, {survivor: step}) of recovery `epoch`, the same on every survivor."""
    store = job_store()
    prefix = f"{PREFIX}/{epoch}"
    store.set(f"{prefix}/in/{rank}", str(step))
    if store.add(f"{prefix}/decider", 1) == 1:
        deadline = time.monotonic() + grace_s
        while True:
            arrived = [r for r in range(world) if store.check([f"{prefix}/in/{r}"])]
            missing = [r for r in range(world) if r not in arrived]
            if all(_process_gone(store, r) for r in missing) or time.monotonic() > deadline:
                break
            time.sleep(0.01)
        steps = {r: int(store.get(f"{prefix}/in/{r}")) for r in arrived}
        store.set(f"{prefix}/decision", json.dumps({"lost": missing, "steps": steps}))
    wait_until = time.monotonic() + 2 * grace_s + 5
    while not store.check([f"{prefix}/decision"]):
        if time.monotonic() > wait_until:
            raise PeerFailed(f"rank {rank}: no decision on the lost ranks within "
                             f"{2 * grace_s + 5:.0f} s (the survivor that decides failed too)")
        time.sleep(0.01)
    decision = json.loads(store.get(f"{prefix}/decision"))
    steps = {int(r): s for r, s in decision["steps"].items()}
    if rank not in steps:
        raise PeerFailed(f"rank {rank}: the survivors went on without this rank (it checked in "
                         f"after {grace_s:.0f} s)")
    return decision["lost"], steps
