"""How a replacement rank finds a running job (`--join DIR`, docs/reliability.md "A replacement
joins"): rank 0 of a job run with `--survive DIR` writes DIR/job.json naming the job's store
(the one torch.distributed formed the world with: mixcclrun's file store, or the TCP store of
an env:// rendezvous) and whether it takes new ranks (`--allow-grow`). The joiner and the job
then talk through that store under PREFIX, never through a communicator: the joiner has none
until the job forms the larger group with it."""
import json
import os
import socket

import torch.distributed as dist

PREFIX = "mixccl.train/grow"


def job_file(folder):
    return os.path.join(folder, "job.json")


def base_store():
    """The job's own store under the default group's prefixes (torch wraps it in a PrefixStore
    per group, the grown groups in one more): the store a joiner opens from its address."""
    store = dist.distributed_c10d._get_default_store()
    while isinstance(store, dist.PrefixStore):
        store = store.underlying_store
    return store


def store_address(store_file):
    """file://PATH under mixcclrun (runner.init_process_group's file store), else the env://
    rendezvous's tcp://MASTER_ADDR:MASTER_PORT."""
    if store_file:
        return "file://" + os.path.abspath(store_file)
    if "MASTER_ADDR" in os.environ and "MASTER_PORT" in os.environ:
        return f"tcp://{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}"
    return None


def open_store(address, timeout):
    """The job's store from its address, as a rank that did not form it (a file store with an
    unknown number of users, so this process never deletes the file; a TCP store client)."""
    if address.startswith("file://"):
        store = dist.FileStore(address[len("file://"):], -1)
    else:
        host, port = address[len("tcp://"):].rsplit(":", 1)
        store = dist.TCPStore(host, int(port), is_master=False, timeout=timeout,
                              wait_for_workers=False)
    store.set_timeout(timeout)
    return store


def write_job_file(folder, info):
    """Written whole, then renamed: a joiner never reads half a file."""
    os.makedirs(folder, exist_ok=True)
    path = job_file(folder)
    with open(path + ".part", "w") as f:
        json.dump(dict(info, host=socket.gethostname(), pid=os.getpid()), f, indent=1)
        f.write("\n")
    os.replace(path + ".part", path)


def read_job_file(folder):
    """DIR/job.json, or None while there is none."""
    try:
        with open(job_file(folder)) as f:
            return json.load(f)
    except FileNotFoundError:
        return None
