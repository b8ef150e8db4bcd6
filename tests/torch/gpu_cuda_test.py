"""CUDA tensors through init_process_group("mixccl") (docs/pytorch.md, "CUDA tensors").

Run by the `torch` step of scripts/gpu-check.sh on the device machine (one GPU); on a machine
without one the job's test is skipped with the reason "no CUDA device" (CTest
torch_gpu_cuda_test_collects expects exactly that skip), unless the layout below has CPU ranks
only (CTest torch_gpu_cuda_test_checks_on_cpu_ranks: the same checks on 3 CPU ranks).

One job, its ranks sharing the one GPU (NCCL refuses two ranks on one GPU, so only one rank is
on the nccl adaptor). MIXCCL_GPU_TEST_RANKS lists each rank as adaptor:tensors, by default
    nccl:cuda   device pointers on the backend's internal stream (route device-direct)
    host:cuda   CUDA tensors staged through pinned host memory (host-staged)
    host:cpu    x 3: CPU ranks (host-direct)
so the group mixes a GPU rank on nccl with CPU ranks (mixccl stages across the domains).
Every rank runs the same checks in the same order and prints one line per check
("CHECK <name> ok <detail>" or "CHECK <name> FAIL <why>"), then "RESULT ok" or "RESULT FAIL".

    python3 tests/torch/gpu_cuda_test.py -v                      # the job (skips without a GPU)
    python3 tests/torch/gpu_cuda_test.py --rank R --size N --init file:///tmp/x   # one rank
The nccl rank needs MIXCCL_PLUGIN_PATH (the nccl adaptor) and MIXCCL_NCCL_LIBRARY, as
gpu-check.sh sets them.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time
import traceback
import unittest
from datetime import timedelta

import torch
import torch.distributed as dist

DEFAULT_RANKS = "nccl:cuda,host:cuda,host:cpu,host:cpu,host:cpu"
JOB_LIMIT_S = float(os.environ.get("MIXCCL_GPU_TEST_LIMIT_S", "120"))


def rank_layout():
    return [tuple(r.split(":")) for r in
            os.environ.get("MIXCCL_GPU_TEST_RANKS", DEFAULT_RANKS).split(",")]


# ---------------------------------------------------------------------------- one rank

class Rank:
    def __init__(self, rank, size, device):
        self.rank, self.size, self.device = rank, size, device
        self.cuda = device.type == "cuda"
        self.failed = False

    def check(self, name, fn):
        try:
            detail = fn()
            print(f"CHECK {name} ok {detail or ''}".rstrip(), flush=True)
        except Exception as e:  # noqa: BLE001  (every check reports, the job goes on)
            self.failed = True
            print(f"CHECK {name} FAIL {type(e).__name__}: {e}", flush=True)
            traceback.print_exc()

    def t(self, values, dtype=torch.float32):
        return torch.tensor(values, dtype=dtype, device=self.device)

    def expect_equal(self, got, want, what):
        got = got.cpu()
        want = want.cpu() if torch.is_tensor(want) else torch.tensor(want, dtype=got.dtype)
        if not torch.equal(got, want.to(got.dtype).reshape(got.shape)):
            raise AssertionError(f"{what}: got {got.flatten()[:8].tolist()}, "
                                 f"expected {want.flatten()[:8].tolist()}")


def check_every_op(r):
    n, me = r.size, r.rank
    total = n * (n + 1) // 2  # sum of rank + 1 over the ranks

    def all_reduce():
        x = torch.full((4096,), float(me + 1), device=r.device)
        dist.all_reduce(x)
        r.expect_equal(x, torch.full((4096,), float(total)), "sum float32")
        y = r.t([me, -me, 7], torch.int64)
        dist.all_reduce(y, op=dist.ReduceOp.MAX)
        r.expect_equal(y, [n - 1, 0, 7], "max int64")
        z = r.t([1 << me], torch.int32)
        dist.all_reduce(z, op=dist.ReduceOp.BOR)
        r.expect_equal(z, [(1 << n) - 1], "bor int32")
        h = torch.full((333,), float(me), dtype=torch.float16, device=r.device)
        dist.all_reduce(h, op=dist.ReduceOp.AVG)
        r.expect_equal(h, torch.full((333,), (n - 1) / 2, dtype=torch.float16), "avg float16")
        nc = torch.arange(12, dtype=torch.float32, device=r.device).reshape(3, 4).t()  # strided
        dist.all_reduce(nc)
        r.expect_equal(nc, torch.arange(12.).reshape(3, 4).t() * n, "non-contiguous sum")
        return "sum/max/bor/avg/non-contiguous"

    def broadcast():
        for root in range(n):
            x = r.t([me * 10 + 1, me * 10 + 2], torch.float64)
            dist.broadcast(x, src=root)
            r.expect_equal(x, [root * 10 + 1, root * 10 + 2], f"root {root}")
        return f"roots 0-{n - 1}"

    def reduce():
        x = r.t([me + 1, 1])
        dist.reduce(x, dst=0)
        if me == 0:
            r.expect_equal(x, [total, n], "at root 0")

    def all_gather():
        outs = [torch.zeros(3, device=r.device) for _ in range(n)]
        dist.all_gather(outs, r.t([me, me, me]))
        for i, o in enumerate(outs):
            r.expect_equal(o, [i, i, i], f"list item {i}")
        flat = torch.zeros(2 * n, dtype=torch.int32, device=r.device)
        dist.all_gather_into_tensor(flat, r.t([me, -me], torch.int32))
        r.expect_equal(flat, [v for i in range(n) for v in (i, -i)], "into tensor")

    def reduce_scatter():
        out = torch.zeros(2, device=r.device)
        dist.reduce_scatter_tensor(out, torch.arange(2 * n, dtype=torch.float32,
                                                     device=r.device))
        r.expect_equal(out, [2 * me * n, (2 * me + 1) * n], "tensor")
        out = torch.zeros(3, device=r.device)
        dist.reduce_scatter(out, [torch.full((3,), float(i + me), device=r.device)
                                  for i in range(n)])
        r.expect_equal(out, torch.full((3,), float(me * n + total - n)), "list")

    def all_to_all():
        out = torch.zeros(n, device=r.device)
        dist.all_to_all_single(out, torch.arange(n, dtype=torch.float32, device=r.device)
                               + 100 * me)
        r.expect_equal(out, [100 * i + me for i in range(n)], "single")
        outs = [torch.zeros(2, device=r.device) for _ in range(n)]
        dist.all_to_all(outs, [torch.full((2,), float(me * n + i), device=r.device)
                               for i in range(n)])
        for i, o in enumerate(outs):
            r.expect_equal(o, [i * n + me] * 2, f"list from {i}")

    def gather_scatter():
        root = n - 1
        outs = [torch.zeros(2, device=r.device) for _ in range(n)] if me == root else None
        dist.gather(r.t([me, me]), gather_list=outs, dst=root)
        if me == root:
            for i, o in enumerate(outs):
                r.expect_equal(o, [i, i], f"gather from {i}")
        out = torch.zeros(2, device=r.device)
        ins = [torch.full((2,), float(i * 3), device=r.device) for i in range(n)] if me == 0 \
            else None
        dist.scatter(out, scatter_list=ins, src=0)
        r.expect_equal(out, [me * 3] * 2, "scatter from 0")

    def send_recv():
        dst, src = (me + 1) % n, (me - 1) % n
        got = torch.zeros(1000, device=r.device)
        works = [dist.isend(torch.full((1000,), float(me), device=r.device), dst),
                 dist.irecv(got, src)]
        for w in works:
            w.wait()
        r.expect_equal(got, torch.full((1000,), float(src)), f"from {src}")

    def barrier():
        dist.barrier()

    for name, fn in [("all_reduce", all_reduce), ("broadcast", broadcast), ("reduce", reduce),
                     ("all_gather", all_gather), ("reduce_scatter", reduce_scatter),
                     ("all_to_all", all_to_all), ("gather_scatter", gather_scatter),
                     ("send_recv", send_recv), ("barrier", barrier)]:
        r.check(name, fn)


def check_side_stream_producer(r):
    """A tensor written on a side stream (behind a GPU sleep), the current stream waiting for
    that stream, then all_reduce: the collective must see the written values."""
    def run():
        x = torch.zeros(1 << 20, device=r.device)
        if r.cuda:
            side = torch.cuda.Stream(device=r.device)
            with torch.cuda.stream(side):
                torch.cuda._sleep(200_000_000)  # ~0.1 s of GPU clock: the write lands late
                x.fill_(float(r.rank + 1))
            torch.cuda.current_stream(r.device).wait_stream(side)
        else:
            x.fill_(float(r.rank + 1))
        dist.all_reduce(x)
        r.expect_equal(x, torch.full((1 << 20,), float(r.size * (r.size + 1) // 2)), "sum")
        return "on a side stream" if r.cuda else "cpu"
    r.check("side_stream_producer", run)


def check_wait_does_not_block(r, device_direct):
    """On the device-direct rank: with the current stream busy (a GPU sleep), wait() returns
    while it is still busy (the stream waits, not the host); is_completed() is False until the
    GPU is past the collective; the future's value is right after synchronize."""
    def run():
        x = torch.full((1 << 16,), float(r.rank), device=r.device)
        if not device_direct:
            dist.all_reduce(x)
            return "not the device-direct rank: took part only"
        torch.cuda._sleep(1_000_000_000)  # ~0.5 s on the current stream, before the collective
        start = time.monotonic()
        work = dist.all_reduce(x, async_op=True)
        work.wait()
        waited = time.monotonic() - start
        busy = not torch.cuda.current_stream(r.device).query()
        completed_early = work.is_completed()
        fut = work.get_future()
        torch.cuda.synchronize(r.device)
        assert busy, f"the current stream was idle when wait() returned ({waited:.3f} s)"
        assert not completed_early, "is_completed() was True while the GPU was still sleeping"
        assert work.is_completed(), "is_completed() False after synchronize"
        fut.wait()
        r.expect_equal(fut.value()[0], torch.full((1 << 16,), float(sum(range(r.size)))),
                       "future value")
        return f"wait() returned in {waited * 1000:.1f} ms with the stream still busy"
    r.check("wait_does_not_block_host", run)


def check_cpu_tensor_on_any_rank(r):
    """CPU tensors on every rank, whatever its adaptor (on the nccl rank: staged through device
    memory, complete on the host when wait() returns)."""
    def run():
        x = torch.full((100,), float(r.rank + 1))
        dist.all_reduce(x)
        r.expect_equal(x, torch.full((100,), float(r.size * (r.size + 1) // 2)), "sum")
    r.check("cpu_tensor", run)


def check_ddp_matches_gloo(r):
    """DDP over mixccl on this rank's device against DDP over gloo on CPU copies: the same
    seed, data and steps; parameters equal within fp32 rounding of the sum order."""
    def run():
        from torch.nn.parallel import DistributedDataParallel as DDP
        gloo = dist.new_group(backend="gloo")

        def model():
            torch.manual_seed(0)
            return torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(),
                                       torch.nn.Linear(64, 4))
        ours = DDP(model().to(r.device), device_ids=[r.device.index] if r.cuda else None)
        ref = DDP(model(), process_group=gloo)
        opt_ours = torch.optim.SGD(ours.parameters(), lr=0.1)
        opt_ref = torch.optim.SGD(ref.parameters(), lr=0.1)
        gen = torch.Generator().manual_seed(100 + r.rank)
        for _ in range(5):
            data, target = torch.randn(16, 32, generator=gen), torch.randn(16, 4, generator=gen)
            for net, opt, dev in ((ours, opt_ours, r.device), (ref, opt_ref, "cpu")):
                opt.zero_grad()
                loss = torch.nn.functional.mse_loss(net(data.to(dev)), target.to(dev))
                loss.backward()
                opt.step()
        worst = max((a.detach().cpu() - b.detach()).abs().max().item()
                    for a, b in zip(ours.parameters(), ref.parameters()))
        assert worst <= 1e-5, f"largest parameter difference {worst:g}"
        return f"5 steps, largest parameter difference {worst:.2g}"
    r.check("ddp_matches_gloo", run)


def rank_main(rank, size, init):
    import mixccl.torch  # noqa: F401  registers "mixccl"
    adaptor, tensors = rank_layout()[rank]
    device = torch.device("cuda", 0) if tensors == "cuda" else torch.device("cpu")
    if tensors == "cuda":
        torch.cuda.set_device(device)
    dist.init_process_group("mixccl", init_method=init, rank=rank, world_size=size,
                            timeout=timedelta(seconds=60))
    backend = dist.group.WORLD._get_backend(torch.device("cpu"))
    print(f"CHECK layout ok rank {rank}: adaptor {backend.adaptor}, {tensors} tensors", flush=True)
    r = Rank(rank, size, device)
    check_every_op(r)
    check_side_stream_producer(r)
    check_wait_does_not_block(r, adaptor == "nccl" and tensors == "cuda")
    check_cpu_tensor_on_any_rank(r)
    check_ddp_matches_gloo(r)
    dist.destroy_process_group()
    print("RESULT FAIL" if r.failed else "RESULT ok", flush=True)
    return 1 if r.failed else 0


# ---------------------------------------------------------------------------- the job

def run_job():
    """Starts every rank of the layout; returns [(exit code, output)]."""
    layout = rank_layout()
    with tempfile.TemporaryDirectory() as tmp:
        procs = []
        for rank, (adaptor, _) in enumerate(layout):
            env = {**os.environ, "MIXCCL_ADAPTOR": adaptor}
            procs.append(subprocess.Popen(
                [sys.executable, os.path.abspath(__file__), "--rank", str(rank), "--size",
                 str(len(layout)), "--init", f"file://{tmp}/store"],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env))
        deadline = time.monotonic() + JOB_LIMIT_S
        outs = []
        for p in procs:
            try:
                outs.append(p.communicate(timeout=max(1.0, deadline - time.monotonic()))[0])
            except subprocess.TimeoutExpired:
                for q in procs:
                    q.kill()
                outs.append(p.communicate()[0] + f"\n(killed after {JOB_LIMIT_S:.0f} s)")
        return [(p.returncode, o) for p, o in zip(procs, outs)]


JOB_OUTPUT = []  # (exit code, output) per rank, printed after unittest's report


class TestCudaTensors(unittest.TestCase):
    def test_extension_built_with_cuda_where_torch_has_it(self):
        import mixccl._torch_backend as ext
        self.assertEqual(ext.cuda_built, torch.version.cuda is not None)

    # A layout of CPU ranks only (CTest torch_gpu_cuda_test_checks_on_cpu_ranks) runs anywhere:
    # it checks the checks' expected values without a GPU.
    @unittest.skipUnless(torch.cuda.is_available() or
                         all(tensors == "cpu" for _, tensors in rank_layout()), "no CUDA device")
    def test_job(self):
        results = run_job()
        JOB_OUTPUT.extend(results)
        for rank, (code, out) in enumerate(results):
            checks = [ln for ln in out.splitlines() if ln.startswith("CHECK ")]
            self.assertFalse([c for c in checks if " FAIL " in c], f"rank {rank}")
            self.assertEqual(len(checks), 14, f"rank {rank}: {len(checks)} checks ran")
            self.assertIn("RESULT ok", out, f"rank {rank}")
            self.assertEqual(code, 0, f"rank {rank}")


if __name__ == "__main__":
    if "--rank" in sys.argv:
        a = argparse.ArgumentParser()
        a.add_argument("--rank", type=int, required=True)
        a.add_argument("--size", type=int, required=True)
        a.add_argument("--init", required=True)
        args = a.parse_args()
        sys.exit(rank_main(args.rank, args.size, args.init))
    result = unittest.main(exit=False).result
    for rank, (code, out) in enumerate(JOB_OUTPUT):
        print(f"---- rank {rank} (exit {code})\n{out}", flush=True)
    sys.exit(0 if result.wasSuccessful() else 1)
