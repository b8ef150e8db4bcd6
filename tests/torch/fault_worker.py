"""One rank of a test_faults.py job (started as a plain process, so a rank can die for real).

    python3 fault_worker.py MODE RANK SIZE INIT_METHOD

Prints one RESULT line; exit status 0 when the rank behaved as the mode expects."""

import os
import signal
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist

import mixccl.torch  # noqa: F401


def threads():
    return len(os.listdir("/proc/self/task"))


def shm_left_since(before):
    """Names new in /dev/shm since `before` that are still there 3 s later: tests running beside
    this one create and remove their own names meanwhile."""
    left = set(os.listdir("/dev/shm")) - before
    for _ in range(30):
        if not left:
            break
        time.sleep(0.1)
        left &= set(os.listdir("/dev/shm"))
    return sorted(left)


def main(mode, rank, size, init_method):
    timeout = timedelta(seconds=float(os.environ.get("FAULT_PG_TIMEOUT_S", "20")))
    if mode == "destroy":
        torch.ones(1 << 20).sum()  # starts torch's own thread pool before counting
        before_threads, before_shm = threads(), set(os.listdir("/dev/shm"))
    if mode == "device_adaptor":
        try:
            dist.init_process_group("mixccl", init_method=init_method, rank=rank,
                                    world_size=size, timeout=timeout)
            dist.barrier()
        except Exception as e:  # noqa: BLE001
            print(f"RESULT raised {type(e).__name__}: {e}", flush=True)
            os._exit(0)
        print("RESULT no error", flush=True)
        os._exit(1)
    dist.init_process_group("mixccl", init_method=init_method, rank=rank, world_size=size,
                            timeout=timeout)
    if mode == "kill":
        t = torch.ones(1 << 20)
        start = None
        try:
            for i in range(100000):
                if i == 3:
                    start = time.monotonic()
                    if rank == size - 1:
                        os.kill(os.getpid(), signal.SIGKILL)
                dist.all_reduce(t)
        except Exception as e:  # noqa: BLE001  (the test checks type and message)
            print(f"RESULT raised {type(e).__name__} after {time.monotonic() - start:.2f} s: {e}",
                  flush=True)
            os._exit(0)  # the group is broken; do not wait on it at exit
        print("RESULT no error", flush=True)
        return 1
    if mode == "abort":
        if rank == 1:
            time.sleep(8)  # never joins the allreduce; rank 0 aborts meanwhile
            os._exit(0)
        work = dist.all_reduce(torch.ones(1 << 20), async_op=True)
        time.sleep(0.5)
        start = time.monotonic()
        dist.group.WORLD.abort()  # from this thread, while the worker is blocked in mixccl
        try:
            work.wait()
        except Exception as e:  # noqa: BLE001
            print(f"RESULT raised {type(e).__name__} after {time.monotonic() - start:.2f} s: {e}",
                  flush=True)
            os._exit(0)
        print("RESULT no error", flush=True)
        os._exit(1)
    if mode == "monitored":
        if rank == size - 1:
            time.sleep(6)  # never reaches the barrier in time
            os._exit(0)
        try:
            dist.monitored_barrier(timeout=timedelta(seconds=2), wait_all_ranks=True)
        except Exception as e:  # noqa: BLE001
            print(f"RESULT raised {type(e).__name__}: {e}", flush=True)
            os._exit(0)
        print("RESULT no error", flush=True)
        os._exit(1)
    if mode == "destroy":
        peer = 1 - rank
        t = torch.ones(1000)
        dist.all_reduce(t)
        got = torch.empty(10)
        works = [dist.isend(torch.ones(10), peer), dist.irecv(got, peer)]
        for w in works:
            w.wait()
        dist.destroy_process_group()
        left_threads = threads() - before_threads
        left_shm = shm_left_since(before_shm)
        print(f"RESULT threads left {left_threads} shm left {left_shm}", flush=True)
        return 0 if left_threads == 0 and not left_shm else 1
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]))
