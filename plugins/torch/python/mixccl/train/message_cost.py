"""What one point-to-point message between pipeline stages costs a rank of the trainer, for the
profile's "message" part (profiler.py): two processes on the mixccl backend, a core each, idle
for a stage's pause between its passes and then each send an activation-sized tensor to the
other and take the other's, as pipeline.py does between two passes (isend to the neighbour,
irecv from it, wait). The median time from the send's post to the receive's end is what a
stage pays per micro-batch: the posts, the backend's hand-off to its progress thread and
back, the wake-ups after the pause, the copy.

The planner's link price (the cluster spec's bandwidth and latency, 20 us in the emulated
clusters) leaves all that out; in the trainer it came to about 0.3 ms a micro-batch on the
2-core test machine (docs/training-results.md, "Where the planner's price of a stage goes
wrong, part by part"), which a plan of many small micro-batches pays dozens of times a step.

  python -m mixccl.train.message_cost STORE RANK SEQ_LENGTH HIDDEN SIZES ROUNDS
(started by measure(), not by hand): rank 0 prints one line "micro-batch seconds" per size."""
import os
import subprocess
import sys
import tempfile
import time

WARMUP_ROUNDS = 20
IDLE_S = 0.005  # a stage's idle between passes at small micro-batches (its emulated sleep)


def _exchange(rank, seq_length, hidden, sizes, rounds):
    import torch
    import torch.distributed as dist
    peer = 1 - rank
    out = {}
    for mb in sizes:
        x = torch.zeros(mb, seq_length, hidden)
        y = torch.empty_like(x)
        times = []
        for i in range(WARMUP_ROUNDS + rounds):
            # Both sides idle as a stage does between its passes (the peer's message arrives
            # meanwhile), then send theirs and take the peer's, as a stage between two passes.
            time.sleep(IDLE_S)
            t0 = time.perf_counter()
            sent = dist.isend(x, peer)
            dist.irecv(y, peer).wait()
            times.append(time.perf_counter() - t0)
            sent.wait()
        times = sorted(times[WARMUP_ROUNDS:])
        out[mb] = times[len(times) // 2]
    return out


def _rank_main(argv):
    store, rank, seq_length, hidden, sizes, rounds = argv
    rank = int(rank)
    if len(os.sched_getaffinity(0)) > 1:  # a core each, as mixcclrun binds a job's ranks
        cores = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cores[rank % len(cores)]})
    import datetime
    import torch
    import torch.distributed as dist
    import mixccl.torch  # noqa: F401  registers the "mixccl" backend
    torch.set_num_threads(1)
    dist.init_process_group("mixccl", init_method="file://" + store, rank=rank, world_size=2,
                            timeout=datetime.timedelta(seconds=60))
    got = _exchange(rank, int(seq_length), int(hidden), [int(s) for s in sizes.split(",")],
                     int(rounds))
    dist.barrier()
    dist.destroy_process_group()
    if rank == 0:
        for mb, seconds in got.items():
            print(mb, repr(seconds), flush=True)


def measure(seq_length, hidden, sizes, rounds=100, timeout_s=120):
    """{micro-batch: seconds of one message} from two processes on the mixccl backend."""
    with tempfile.TemporaryDirectory(prefix="mixccl-message-cost-") as folder:
        store = os.path.join(folder, "store")
        env = dict(os.environ)
        env.pop("MIXCCL_COMM_ID", None)  # a launcher's address: the group uses the file store
        cmd = [sys.executable, "-m", "mixccl.train.message_cost", store]
        args = [str(seq_length), str(hidden), ",".join(str(s) for s in sizes), str(rounds)]
        procs = [subprocess.Popen(cmd + [str(r)] + args, env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for r in (0, 1)]
        try:
            outs = [p.communicate(timeout=timeout_s) for p in procs]
        finally:
            for p in procs:  # one that timed out, or whose peer failed, does not outlive us
                if p.poll() is None:
                    p.kill()
                    p.wait()
    for r, (p, (stdout, stderr)) in enumerate(zip(procs, outs)):
        if p.returncode != 0:
            raise RuntimeError(f"measuring the cost of a point-to-point message: rank {r} of 2 "
                               f"exited with status {p.returncode}: {stderr.strip()[-400:]}")
    got = {}
    for line in outs[0][0].split("\n"):
        if line.strip():
            mb, seconds = line.split()
            got[int(mb)] = float(seconds)
    return got


if __name__ == "__main__":
    _rank_main(sys.argv[1:])
