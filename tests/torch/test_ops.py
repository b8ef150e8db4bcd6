"""Every torch.distributed operation on backend "mixccl" against results computed in Python:
op x dtype x reduce op, uneven all_to_all, non-contiguous tensors, coalesced calls, bad input
(a clear exception, and the group stays usable), point-to-point that must not deadlock."""

import os
import time
from datetime import timedelta
import unittest

import torch
import torch.distributed as dist

from mixccl_test_case import MixcclTestCase

R = dist.ReduceOp
REDUCE_DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8,
                 torch.uint8, torch.int32, torch.int64, torch.bool]
MOVE_DTYPES = REDUCE_DTYPES + [torch.complex64, torch.float8_e4m3fn]


def rank_input(rank, dtype, n=6):
    """What rank contributes: small values so products and sums stay exact in every dtype."""
    g = torch.Generator().manual_seed(1000 + rank)
    if dtype == torch.bool:
        return torch.randint(0, 2, (n,), generator=g).bool()
    if dtype == torch.uint8:
        return torch.randint(1, 4, (n,), generator=g).to(dtype)
    if dtype.is_floating_point:
        return torch.randint(-3, 4, (n,), generator=g).to(torch.float64).mul(0.5).to(dtype)
    if dtype.is_complex:
        return torch.complex(torch.randn(n, generator=g), torch.randn(n, generator=g)).to(dtype)
    return torch.randint(-3, 4, (n,), generator=g).to(dtype)


def expected(op, dtype, size, n=6, factor=None):
    xs = [rank_input(r, dtype, n) for r in range(size)]
    if dtype == torch.bool:
        stacked = torch.stack(xs)
        if op in (R.SUM, R.MAX, R.BOR):
            return stacked.any(0)
        if op in (R.PRODUCT, R.MIN, R.BAND):
            return stacked.all(0)
        acc = xs[0].clone()
        for x in xs[1:]:
            acc ^= x
        return acc
    wide = torch.float64 if dtype.is_floating_point else torch.int64
    stacked = torch.stack([x.to(wide) for x in xs])
    if op == R.SUM:
        out = stacked.sum(0)
    elif op == R.PRODUCT:
        out = stacked.prod(0)
    elif op == R.MIN:
        out = stacked.min(0).values
    elif op == R.MAX:
        out = stacked.max(0).values
    elif op == R.AVG:
        out = stacked.sum(0) / size if dtype.is_floating_point else \
            torch.div(stacked.sum(0), size, rounding_mode="trunc")
    elif op == "premul":
        out = (stacked * factor).sum(0)
    else:
        acc = stacked[0].clone()
        for x in stacked[1:]:
            acc = acc & x if op == R.BAND else acc | x if op == R.BOR else acc ^ x
        out = acc
    return out.to(dtype)  # integers wrap like the library's (two's complement)


def ops_for(dtype):
    if dtype == torch.bool:
        return [R.SUM, R.PRODUCT, R.MIN, R.MAX, R.BAND, R.BOR, R.BXOR]
    ops = [R.SUM, R.PRODUCT, R.MIN, R.MAX, R.AVG]
    if not dtype.is_floating_point:
        ops += [R.BAND, R.BOR, R.BXOR]
    return ops


class TestMixcclOps(MixcclTestCase):
    WORLD_SIZE = 3

    def assert_same(self, got, want, what):
        if want.dtype.is_floating_point:
            tol = 0 if want.dtype in (torch.float32, torch.float64) else 1e-2
            torch.testing.assert_close(got.to(torch.float64), want.to(torch.float64),
                                       atol=tol, rtol=tol, msg=what)
        else:
            self.assertTrue(torch.equal(got, want), f"{what}: {got} != {want}")

    def test_reductions_every_dtype_and_op(self):
        self.init_pg()
        size = self.world_size
        for dtype in REDUCE_DTYPES:
            for op in ops_for(dtype):
                what = f"{dtype} {op}"
                want = expected(op, dtype, size)
                t = rank_input(self.rank, dtype)
                dist.all_reduce(t, op=op)
                self.assert_same(t, want, "all_reduce " + what)

                t = rank_input(self.rank, dtype)
                dist.reduce(t, dst=1, op=op)
                if self.rank == 1:
                    self.assert_same(t, want, "reduce " + what)

                n = 2 * size
                inp = torch.cat([rank_input(self.rank, dtype, n)])
                out = torch.empty(2, dtype=dtype)
                dist.reduce_scatter_tensor(out, inp, op=op)
                whole = expected(op, dtype, size, n)
                self.assert_same(out, whole[2 * self.rank:2 * self.rank + 2],
                                 "reduce_scatter_tensor " + what)

                outl = torch.empty(2, dtype=dtype)
                dist.reduce_scatter(outl, list(inp.chunk(size)), op=op)
                self.assert_same(outl, out, "reduce_scatter " + what)
        for dtype in (torch.float32, torch.float64, torch.bfloat16):
            t = rank_input(self.rank, dtype)
            dist.all_reduce(t, op=dist._make_nccl_premul_sum(2.0))
            self.assert_same(t, expected("premul", dtype, size, factor=2.0), f"premul {dtype}")
        dist.destroy_process_group()

    def test_refused_reductions_name_the_problem(self):
        self.init_pg()
        with self.assertRaisesRegex(RuntimeError, "ReduceOp.AVG is not defined on bool"):
            dist.all_reduce(torch.ones(2, dtype=torch.bool), op=R.AVG)
        with self.assertRaisesRegex(RuntimeError,
                                    "ReduceOp.BAND needs an integer or bool tensor, got Float"):
            dist.all_reduce(torch.ones(2), op=R.BAND)
        with self.assertRaisesRegex(RuntimeError, "reductions on dtype UInt16 are not supported"):
            dist.all_reduce(torch.ones(2, dtype=torch.uint16))
        t = torch.ones(2)
        dist.all_reduce(t)
        self.assertEqual(t.tolist(), [3.0, 3.0])
        dist.destroy_process_group()

    def test_data_movement_every_dtype(self):
        self.init_pg()
        size, rank = self.world_size, self.rank
        for dtype in MOVE_DTYPES:
            mine = rank_input(rank, dtype, 4)
            every = [rank_input(r, dtype, 4) for r in range(size)]
            eq = lambda a, b: torch.equal(a.view(torch.uint8), b.view(torch.uint8))  # noqa: E731

            t = mine.clone()
            dist.broadcast(t, src=2)
            self.assertTrue(eq(t, every[2]), f"broadcast {dtype}")

            outs = [torch.empty_like(mine) for _ in range(size)]
            dist.all_gather(outs, mine)
            self.assertTrue(all(eq(o, e) for o, e in zip(outs, every)), f"all_gather {dtype}")

            flat = torch.empty(4 * size, dtype=dtype)
            dist.all_gather_into_tensor(flat, mine)
            self.assertTrue(eq(flat, torch.cat(every)), f"all_gather_into_tensor {dtype}")

            gl = [torch.empty_like(mine) for _ in range(size)] if rank == 0 else None
            dist.gather(mine, gl, dst=0)
            if rank == 0:
                self.assertTrue(all(eq(o, e) for o, e in zip(gl, every)), f"gather {dtype}")

            got = torch.empty_like(mine)
            dist.scatter(got, every if rank == 1 else None, src=1)
            self.assertTrue(eq(got, every[rank]), f"scatter {dtype}")

            # all_to_all_single, uneven: rank r sends (p + 1) rows of 2 to peer p.
            rows_to = [p + 1 for p in range(size)]
            send = torch.cat([rank_input(100 * rank + p, dtype, 2 * rows_to[p]).view(-1, 2)
                              for p in range(size)])
            recv_rows = [rank + 1] * size
            recv = torch.empty(sum(recv_rows), 2, dtype=dtype)
            dist.all_to_all_single(recv, send, recv_rows, rows_to)
            want = torch.cat([rank_input(100 * p + rank, dtype, 2 * (rank + 1)).view(-1, 2)
                              for p in range(size)])
            self.assertTrue(eq(recv, want), f"all_to_all_single uneven {dtype}")

            ins = [rank_input(10 * rank + p, dtype, p + 1) for p in range(size)]
            outs = [torch.empty(rank + 1, dtype=dtype) for _ in range(size)]
            dist.all_to_all(outs, ins)
            self.assertTrue(all(eq(outs[p], rank_input(10 * p + rank, dtype, rank + 1))
                                for p in range(size)), f"all_to_all {dtype}")

            if rank < 2:
                buf = torch.empty_like(mine)
                if rank == 0:
                    dist.send(mine, dst=1)
                    dist.recv(buf, src=1)
                else:
                    dist.recv(buf, src=0)
                    dist.send(mine, dst=0)
                self.assertTrue(eq(buf, every[1 - rank]), f"send/recv {dtype}")
        dist.destroy_process_group()

    def test_non_contiguous_tensors(self):
        self.init_pg()
        base = torch.arange(12, dtype=torch.float32).view(3, 4) + self.rank
        t = base.t()  # a view with strides (1, 4)
        self.assertFalse(t.is_contiguous())
        dist.all_reduce(t)
        self.assertTrue(torch.equal(base, (torch.arange(12.0).view(3, 4) * 3 + 3)))
        col = torch.zeros(4, 2)[:, 1]
        col += self.rank + 1
        dist.broadcast(col, src=1)
        self.assertEqual(col.tolist(), [2.0] * 4)
        outs = [torch.zeros(2, 3)[:, 0] for _ in range(self.world_size)]
        dist.all_gather(outs, torch.full((2,), float(self.rank)))
        self.assertEqual([o.tolist() for o in outs], [[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]])
        dist.destroy_process_group()

    def test_coalesced_calls(self):
        self.init_pg()
        a, b = torch.ones(3), torch.full((5,), 2.0)
        with dist._coalescing_manager(async_ops=True) as cm:
            dist.all_reduce(a)
            dist.all_reduce(b)
        cm.wait()
        self.assertEqual(a.tolist(), [3.0] * 3)
        self.assertEqual(b.tolist(), [6.0] * 5)
        outs = [torch.empty(2 * self.world_size), torch.empty(self.world_size)]
        with dist._coalescing_manager(async_ops=True) as cm:
            dist.all_gather_into_tensor(outs[0], torch.full((2,), float(self.rank)))
            dist.all_gather_into_tensor(outs[1], torch.full((1,), float(self.rank)))
        cm.wait()
        self.assertEqual(outs[1].tolist(), [0.0, 1.0, 2.0])
        rs = torch.empty(1)
        with dist._coalescing_manager(async_ops=True) as cm:
            dist.reduce_scatter_tensor(rs, torch.arange(3.0))
        cm.wait()
        self.assertEqual(rs.item(), 3.0 * self.rank)
        ts = [torch.ones(2), torch.ones(3)]
        dist.all_reduce_coalesced(ts)
        self.assertEqual(ts[1].tolist(), [3.0] * 3)
        dist.destroy_process_group()

    def test_coalesced_packing(self):
        # allreduce_coalesced packs the small tensors of each dtype into one mixccl call and runs
        # large ones alone (plugins/torch/csrc/coalesced.cc). Every element of every tensor has
        # its own value, so a tensor or an element landing in another's place fails.
        # This job's ranks share one host and its shared-memory slots, where packing is off by
        # default (test_packing_default_on_slots): forced on here.
        os.environ["MIXCCL_TORCH_PACK_BYTES"] = "64K"
        try:
            self.init_pg()
        finally:
            os.environ.pop("MIXCCL_TORCH_PACK_BYTES", None)
        self.assertEqual(self.mixccl_backend().pack_below_bytes, 64 << 10)
        self.assertEqual(self.mixccl_backend().pack_why, "MIXCCL_TORCH_PACK_BYTES=65536")
        total = sum(range(1, self.world_size + 1))

        def base(k, shape, dtype):
            numel = torch.Size(shape).numel()
            return (torch.arange(numel) % 50 + 1 + 100 * k).reshape(shape).to(dtype)

        specs = [((2, 3), torch.float32), ((4,), torch.int64), ((3, 4), torch.float32),
                 ((1 << 19,), torch.float32), ((5,), torch.float16), ((7,), torch.int64),
                 ((1,), torch.float32)]
        ts = [base(k, shape, dtype) * (self.rank + 1) for k, (shape, dtype) in enumerate(specs)]
        ts[2] = ts[2].t()  # non-contiguous
        before = self.mixccl_backend().mixccl_calls()
        with dist._coalescing_manager():
            for t in ts:
                dist.all_reduce(t)
        # float32 0, 2, 6 in one call, int64 1, 5 in another; 3 (2 MiB) and the only float16 alone.
        self.assertEqual(self.mixccl_backend().mixccl_calls() - before, 4)
        for k, (shape, dtype) in enumerate(specs):
            want = base(k, shape, dtype) * total
            got = ts[k].t() if k == 2 else ts[k]
            self.assertTrue(torch.equal(got, want), f"tensor {k}: {dtype} {shape}")
        # Bitwise reductions gather instead of reducing: not packed, still right.
        bits = [torch.full((3,), 1 << self.rank, dtype=torch.int32),
                torch.full((2,), 7, dtype=torch.int32)]
        dist.all_reduce_coalesced(bits, op=R.BOR)
        self.assertEqual(bits[0].tolist(), [(1 << self.world_size) - 1] * 3)
        self.assertEqual(bits[1].tolist(), [7] * 2)
        dist.destroy_process_group()

    def test_packing_default_on_slots(self):
        # Unset MIXCCL_TORCH_PACK_BYTES: a group whose small collectives run on shared-memory
        # slots (this job: 3 ranks of one host) packs nothing (pack_plan.h, packBoundFor); the
        # sockets and slot-less cases run in test_pack_default.py.
        self.init_pg()
        be = self.mixccl_backend()
        slot = int(be.inspect("shm_slot_bytes"))
        self.assertGreater(slot, 0)
        self.assertEqual(be.pack_below_bytes, 0)
        self.assertEqual(be.pack_why, f"default: small collectives on shared-memory slots of "
                         f"{slot} bytes, one call per tensor")
        ts = [torch.full((k + 2,), float(self.rank + k)) for k in range(3)]
        before = be.mixccl_calls()
        dist.all_reduce_coalesced(ts)
        self.assertEqual(be.mixccl_calls() - before, 3)
        for k, t in enumerate(ts):
            self.assertEqual(t.tolist(), [float(sum(range(self.world_size)) +
                                                self.world_size * k)] * (k + 2))
        # A split group decides on its own communicator (here slots again) and keeps the
        # parent's setting (none).
        sub = dist.new_group([0, 1])
        if self.rank < 2:
            self.assertEqual(self.mixccl_backend(sub).pack_below_bytes, 0)
        with self.assertRaisesRegex(RuntimeError, r"mixcclCommInspect: unknown key 'nosuch'"):
            be.inspect("nosuch")
        dist.destroy_process_group()

    def coalesced_gathers(self, specs):
        """all_gather_into_tensor of each (shape, dtype) in specs inside _coalescing_manager, an
        output of every other spec non-contiguous; returns the outputs (the contiguous layout)
        and the mixccl calls they took. Every element of every rank's input has its own value."""
        ins = [(torch.arange(torch.Size(shape).numel()).reshape(shape) % 97 + 100 * k + 1000 *
                self.rank).to(dtype) for k, (shape, dtype) in enumerate(specs)]
        outs = [torch.empty((self.world_size,) + shape, dtype=dtype) if k % 2 == 0 else
                torch.empty(shape[::-1] + (self.world_size,), dtype=dtype).permute(
                    *range(len(shape), -1, -1)) for k, (shape, dtype) in enumerate(specs)]
        before = self.mixccl_backend().mixccl_calls()
        with dist._coalescing_manager():
            for out, inp in zip(outs, ins):
                dist.all_gather_into_tensor(out, inp)
        return [o.contiguous() for o in outs], self.mixccl_backend().mixccl_calls() - before

    def coalesced_reduce_scatters(self, specs, op):
        """reduce_scatter_tensor of each (shape, dtype) in specs (the output's shape; the input
        holds world_size of it) inside _coalescing_manager; returns the outputs and the mixccl
        calls they took."""
        ins = [(torch.arange(self.world_size * torch.Size(shape).numel()) % 7 + k +
                self.rank).reshape((self.world_size,) + shape).to(dtype)
               for k, (shape, dtype) in enumerate(specs)]
        outs = [torch.empty(shape, dtype=dtype) for shape, dtype in specs]
        before = self.mixccl_backend().mixccl_calls()
        with dist._coalescing_manager():
            for out, inp in zip(outs, ins):
                dist.reduce_scatter_tensor(out, inp, op=op)
        return outs, ins, self.mixccl_backend().mixccl_calls() - before

    def test_coalesced_gather_and_reduce_scatter_packing(self):
        # Coalesced all_gather packs its small tensors of every dtype into one mixccl call (a
        # gather moves bytes), reduce_scatter those of each dtype (plugins/torch/csrc/
        # coalesced_gather.cc, coalesced_reduce_scatter.cc); the results equal one call per
        # tensor's (MIXCCL_TORCH_PACK_BYTES=0) and the values computed here.
        gather_specs = [((2, 3), torch.float32), ((5,), torch.float16), ((4,), torch.int64),
                        ((3,), torch.bool), ((2, 2), torch.complex64), ((1,), torch.uint8)]
        big = [((1 << 16,), torch.float32)]  # 3 x 256 KiB gathered: above the bound, alone
        rs_specs = [((2, 3), torch.float32), ((4,), torch.int32), ((5,), torch.float32),
                    ((3,), torch.int32), ((1,), torch.float32)]
        list_shapes = [(2, 3), (5,), (1,)]

        def list_input(k, shape, rank):
            return torch.arange(torch.Size(shape).numel(), dtype=torch.float32).reshape(shape) + \
                100 * k + 1000 * rank

        results = {}
        for pack in ("64K", "0"):  # forced: this one-host job packs nothing by default
            os.environ["MIXCCL_TORCH_PACK_BYTES"] = pack
            try:
                self.init_pg()
            finally:
                os.environ.pop("MIXCCL_TORCH_PACK_BYTES", None)
            packing = pack == "64K"
            self.assertEqual(self.mixccl_backend().pack_below_bytes, 64 << 10 if packing else 0)
            gathered, calls = self.coalesced_gathers(gather_specs)
            self.assertEqual(calls, 1 if packing else len(gather_specs))
            gathered_big, calls = self.coalesced_gathers(gather_specs[:2] + big)
            self.assertEqual(calls, 2 if packing else 3)
            sums, ins, calls = self.coalesced_reduce_scatters(rs_specs, R.SUM)
            self.assertEqual(calls, 2 if packing else len(rs_specs))  # one per dtype
            maxes, _, calls = self.coalesced_reduce_scatters(rs_specs[:3], R.MAX)
            self.assertEqual(calls, 2 if packing else 3)
            # Bitwise reductions gather instead of reducing: one call each, as all_reduce's.
            ors, _, calls = self.coalesced_reduce_scatters(rs_specs[1:4:2], R.BOR)
            self.assertEqual(calls, 2)
            # all_gather_coalesced (lists of outputs, one dtype) packs as all_gather_into_tensor.
            lists = [[torch.empty(shape) for shape in list_shapes] for _ in range(self.world_size)]
            before = self.mixccl_backend().mixccl_calls()
            dist.all_gather_coalesced(lists, [list_input(k, shape, self.rank)
                                              for k, shape in enumerate(list_shapes)])
            self.assertEqual(self.mixccl_backend().mixccl_calls() - before,
                             1 if packing else len(list_shapes))
            results[pack] = (gathered, gathered_big, sums, maxes, ors, lists)
            dist.destroy_process_group()
        for name, packed, each in zip(("gathered", "gathered_big", "sums", "maxes", "ors",
                                       "lists"), results["64K"], results["0"]):
            for k, (a, b) in enumerate(zip(packed, each)):
                if isinstance(a, list):
                    for r, (x, y) in enumerate(zip(a, b)):
                        self.assertTrue(torch.equal(x, y), f"{name} {k} rank {r}")
                else:
                    self.assertTrue(torch.equal(a, b), f"{name} {k}: {a} != {b}")
        for k, (shape, dtype) in enumerate(gather_specs):
            for r in range(self.world_size):
                want = (torch.arange(torch.Size(shape).numel()).reshape(shape) % 97 + 100 * k +
                        1000 * r).to(dtype)
                self.assertTrue(torch.equal(results["0"][0][k][r], want), f"gathered {k} {r}")
        for k, shape in enumerate(list_shapes):
            for r in range(self.world_size):
                self.assertTrue(torch.equal(results["0"][5][r][k], list_input(k, shape, r)),
                                f"lists {k} {r}")
        for k, (shape, dtype) in enumerate(rs_specs):
            n = torch.Size(shape).numel()
            block = (torch.arange(self.world_size * n) % 7 + k).reshape(self.world_size, n)[
                self.rank].reshape(shape)
            want = (block * self.world_size + sum(range(self.world_size))).to(dtype)
            self.assertTrue(torch.equal(results["0"][2][k], want), f"sum {k}")
        # MIXCCL_TORCH_PACK_BYTES takes byte counts only, and says so at init.
        os.environ["MIXCCL_TORCH_PACK_BYTES"] = "64KB"
        try:
            with self.assertRaisesRegex(RuntimeError, r"mixccl: MIXCCL_TORCH_PACK_BYTES=64KB is "
                                        r"not a byte count \(a decimal number, optionally with "
                                        r"K or M; 0 turns packing off\)"):
                self.init_pg()
        finally:
            os.environ.pop("MIXCCL_TORCH_PACK_BYTES", None)
        self.init_pg()
        t = torch.ones(2)
        dist.all_reduce(t)
        self.assertEqual(t.tolist(), [3.0] * 2)
        dist.destroy_process_group()

    def test_bad_input_raises_and_group_stays_usable(self):
        self.init_pg()
        cases = [
            (lambda: dist.all_gather_into_tensor(torch.empty(5), torch.ones(2)),
             "all_gather_into_tensor: the output has 5 elements, expected 6"),
            (lambda: dist.all_gather_into_tensor(torch.empty(6, dtype=torch.int32),
                                                 torch.ones(2)),
             "all_gather_into_tensor: the output has dtype Int, expected Float"),
            (lambda: dist.reduce_scatter_tensor(torch.empty(2), torch.ones(5)),
             "reduce_scatter_tensor: the input has 5 elements, expected 6"),
            (lambda: dist.all_to_all_single(torch.empty(3), torch.ones(3), [1, 1, 1], [2, 1, 1]),
             "input split sizes add up to 4, the input has 3 rows"),
            (lambda: dist.all_gather([torch.empty(2)] * 3, torch.ones(3)),
             "mixccl allgather: an output has 2 elements, expected 3"),
            (lambda: self.mixccl_backend().broadcast([torch.ones(1)], dist.BroadcastOptions()),
             None),  # valid: keeps the ranks in step
        ]
        for call, message in cases:
            if message is None:
                call().wait()
                continue
            with self.assertRaisesRegex(RuntimeError, message):
                call()
        opts = dist.BroadcastOptions()
        opts.rootRank = 7
        with self.assertRaisesRegex(RuntimeError, r"broadcast: invalid root rank 7 \(group of "
                                                  r"size 3\)"):
            self.mixccl_backend().broadcast([torch.ones(1)], opts)
        t = torch.ones(4)
        dist.all_reduce(t)
        self.assertEqual(t.tolist(), [3.0] * 4)
        dist.destroy_process_group()

    def test_isend_before_irecv_does_not_deadlock(self):
        self.init_pg()
        if self.rank < 2:
            peer = 1 - self.rank
            big = torch.full((16 << 20,), float(self.rank))  # 64 MiB: more than any buffer
            got = torch.empty_like(big)
            send = dist.isend(big, peer)   # both ranks send first ...
            recv = dist.irecv(got, peer)   # ... and receive second
            send.wait()
            recv.wait()
            self.assertEqual(got[0].item(), float(peer))
            self.assertEqual(got[-1].item(), float(peer))
            ops = [dist.P2POp(dist.isend, big, peer), dist.P2POp(dist.irecv, got, peer)]
            for w in dist.batch_isend_irecv(ops):
                w.wait()
            self.assertEqual(self.mixccl_backend().p2p_comm_count(), 2)
        dist.barrier()
        dist.destroy_process_group()

    def test_p2p_two_communicators_whatever_the_peers_and_tags(self):
        # Point-to-point of a group goes through two communicators (one per direction),
        # whatever the peers and tags (tags are matched inside): rank 0 exchanges five tags with each other rank, receiving
        # them in the reverse of the order they were sent, so most messages arrive before their
        # receive is posted and wait for it while the later tags go by.
        self.init_pg()
        tags = range(5)
        peers = range(1, self.world_size) if self.rank == 0 else [0]
        sends, recvs = [], []
        for p in peers:
            for tag in tags:
                value = float(100 * self.rank + 10 * p + tag)
                sends.append(dist.isend(torch.full((3 + tag,), value), p, tag=tag))
        for p in peers:
            for tag in reversed(tags):
                got = torch.empty(3 + tag)
                recvs.append((dist.irecv(got, p, tag=tag), got, float(100 * p + 10 * self.rank + tag)))
        for w in sends:
            w.wait()
        for w, got, want in recvs:
            w.wait()
            self.assertEqual(got.tolist(), [want] * got.numel())
        # Tags are independent: the receive of tag 2 completes first although tag 1's larger
        # message (more than any transport buffer) was sent before it and has no receive yet.
        if self.rank < 2:
            peer = 1 - self.rank
            if self.rank == 0:
                first = dist.isend(torch.full((4 << 20,), 1.0), peer, tag=1)
                second = dist.isend(torch.full((5,), 2.0), peer, tag=2)
                first.wait()
                second.wait()
            else:
                small, big = torch.empty(5), torch.empty(4 << 20)
                dist.irecv(small, peer, tag=2).wait()
                dist.recv(big, peer, tag=1)
                self.assertEqual((small[0].item(), big[0].item(), big[-1].item()), (2.0, 1.0, 1.0))
        backend = self.mixccl_backend()
        self.assertEqual(backend.p2p_comm_count(), 2)  # one per direction, whatever the tags
        # Their pairs connect on first use (config.connect, whatever MIXCCL_CONNECT says: at
        # these sizes it would connect every pair at init; init's own partners connect during
        # init either way): rank 0 talked to every rank both ways, the others to rank 0, and in
        # each direction's communicator each of those pairs has its transport.
        for direction in (0, 1):
            self.assertEqual(backend.p2p_inspect("connect", direction), "lazy")
            self.assertEqual(backend.p2p_inspect("connect_why", direction), "config.connect=lazy")
            for p in peers:
                self.assertNotEqual(backend.p2p_inspect(f"transport.{p}", direction), "")
        with self.assertRaisesRegex(RuntimeError, r"mixccl: direction must be 0 \(to higher "
                                    r"ranks\) or 1 \(to lower ranks\), not 2"):
            backend.p2p_inspect("connect", 2)
        dist.barrier()
        dist.destroy_process_group()

    def test_p2p_lanes_when_asked(self):
        # MIXCCL_TORCH_P2P=lanes: the earlier lanes, a communicator per peer, direction and tag
        # (so the count grows with the tags: 2 ranks x 3 tags, both ways), same results.
        os.environ["MIXCCL_TORCH_P2P"] = "lanes"
        try:
            self.init_pg()
        finally:
            del os.environ["MIXCCL_TORCH_P2P"]
        if self.rank < 2:
            peer = 1 - self.rank
            for tag in range(3):
                got = torch.empty(4)
                ops = [dist.P2POp(dist.isend, torch.full((4,), float(10 * self.rank + tag)), peer,
                                  tag=tag), dist.P2POp(dist.irecv, got, peer, tag=tag)]
                for w in dist.batch_isend_irecv(ops):
                    w.wait()
                self.assertEqual(got.tolist(), [float(10 * peer + tag)] * 4)
            self.assertEqual(self.mixccl_backend().p2p_comm_count(), 6)
        dist.barrier()
        dist.destroy_process_group()

    def test_p2p_setting_refused(self):
        os.environ["MIXCCL_TORCH_P2P"] = "sometimes"
        try:
            with self.assertRaisesRegex(RuntimeError, "mixccl: MIXCCL_TORCH_P2P=sometimes is not "
                                        "one of group, lanes"):
                self.init_pg()
        finally:
            del os.environ["MIXCCL_TORCH_P2P"]

    def test_receive_lanes_forming_first_do_not_block_send_lanes(self):
        # Both ranks post a receive before their send, with a new tag, so on each rank the
        # receiving lane waits for its peer's unique id while the sending lane must publish its
        # own on the same store client: the wait must not keep the publish out. A TCPStore (as
        # torchrun's), whose client holds its connection for the whole of a wait; its port is
        # passed through a file store.
        ports = dist.FileStore(f"{self.file_name}.port", self.world_size)
        if self.rank == 0:
            store = dist.TCPStore("127.0.0.1", 0, self.world_size, True,
                                  timeout=timedelta(seconds=10), wait_for_workers=False)
            ports.set("port", str(store.port))
        else:
            store = dist.TCPStore("127.0.0.1", int(ports.get("port")), self.world_size, False,
                                  timeout=timedelta(seconds=10))
        dist.init_process_group("mixccl", store=store, rank=self.rank,
                                world_size=self.world_size, timeout=timedelta(seconds=10))
        if self.rank < 2:
            peer = 1 - self.rank
            got = torch.empty(8)
            recv = dist.irecv(got, peer, tag=41)
            time.sleep(0.5)  # the receiving lane is waiting on the store before the send starts
            send = dist.isend(torch.full((8,), float(self.rank)), peer, tag=41)
            recv.wait()
            send.wait()
            self.assertEqual(got.tolist(), [float(peer)] * 8)
        dist.barrier()
        dist.destroy_process_group()

    def test_async_work_and_future(self):
        self.init_pg()
        t = torch.ones(3)
        work = dist.all_reduce(t, async_op=True)
        fut = work.get_future().then(lambda f: f.value()[0] * 2)
        self.assertEqual(fut.wait().tolist(), [6.0] * 3)
        self.assertTrue(work.wait())
        self.assertTrue(work.is_completed())
        self.assertEqual(work.result()[0].tolist(), [3.0] * 3)
        dist.destroy_process_group()

    def test_recv_from_any_source(self):
        self.init_pg()
        # Ranks 1 and 2 each send their rank twice to rank 0 (tag 5); rank 0 takes four messages
        # from any source (recv and irecv): each whole, two from each sender, in its order.
        if self.rank == 0:
            seen = []
            for i in range(4):
                t = torch.full((6,), -1.0)
                if i % 2:
                    work = dist.irecv(t, tag=5)
                    work.wait()
                    src = work._source_rank()
                else:
                    src = dist.recv(t, tag=5)
                self.assertIn(src, (1, 2))
                self.assertEqual(t.tolist(), [float(src * 10 + seen.count(src))] * 6)
                seen.append(src)
            self.assertEqual(sorted(seen), [1, 1, 2, 2])
        else:
            for k in range(2):
                dist.send(torch.full((6,), float(self.rank * 10 + k)), 0, tag=5)
        # A message of another size stays for a receive of its size; the error names both.
        # Then a receive from any source and one naming the sender share a lane in order.
        if self.rank == 1:
            dist.send(torch.arange(4.0), 0, tag=6)
            dist.send(torch.full((3,), 7.0), 0, tag=6)
            dist.send(torch.full((3,), 8.0), 0, tag=6)
        if self.rank == 0:
            with self.assertRaisesRegex(RuntimeError, r"mixccl recv \(any source\): rank 1 sent "
                                        r"16 bytes with tag 6 to a receive of 32 bytes"):
                dist.recv(torch.empty(8), tag=6)
            t = torch.empty(4)
            dist.recv(t, src=1, tag=6)
            self.assertEqual(t.tolist(), [0.0, 1.0, 2.0, 3.0])
            a, b = torch.empty(3), torch.empty(3)
            self.assertEqual(dist.recv(a, tag=6), 1)
            dist.recv(b, src=1, tag=6)
            self.assertEqual((a.tolist(), b.tolist()), ([7.0] * 3, [8.0] * 3))
            with self.assertRaisesRegex(RuntimeError, "a receive from any source needs at least "
                                                      "one element"):
                dist.recv(torch.empty(0))
        dist.barrier()
        # destroy_process_group ends a receive from any source nobody sends to, at once.
        if self.rank == 0:
            work = dist.irecv(torch.empty(2), tag=9)
            start = time.monotonic()
            dist.destroy_process_group()
            self.assertLess(time.monotonic() - start, 10)
            with self.assertRaisesRegex(RuntimeError, r"mixccl recv \(any source\): the process "
                                                      "group was aborted or shut down"):
                work.wait()
        else:
            dist.destroy_process_group()

    def test_sparse_all_reduce(self):
        self.init_pg()
        # Rank r holds nonzeros at rows r and r+1 (rows overlap between neighbours, rank 2 has
        # one more); the sum is checked against the dense sum, on every rank.
        dense = [torch.zeros(5, 2) for _ in range(self.world_size)]
        for r, d in enumerate(dense):
            d[r] = torch.tensor([r + 1.0, -r])
            d[r + 1] = torch.tensor([10.0 * r, 0.5])
            if r == 2:
                d[0] = torch.tensor([7.0, 7.0])
        t = dense[self.rank].to_sparse()
        dist.all_reduce(t)
        self.assertTrue(t.is_sparse)
        self.assertTrue(torch.equal(t.to_dense(), sum(dense)))
        empty = torch.zeros(3, 4).to_sparse()
        dist.all_reduce(empty)
        self.assertEqual(empty._nnz(), 0)
        with self.assertRaisesRegex(RuntimeError, r"mixccl allreduce: a sparse tensor reduces "
                                                  r"with SUM only \(as gloo's\)"):
            dist.all_reduce(t, op=dist.ReduceOp.MAX)
        dist.all_reduce(t)  # still usable
        self.assertTrue(torch.equal(t.to_dense(), 3 * sum(dense)))
        dist.destroy_process_group()

    def test_recv_from_any_source_times_out(self):
        self.init_pg(timeout_s=2)
        if self.rank == 0:
            start = time.monotonic()
            with self.assertRaisesRegex(RuntimeError, r"mixccl recv \(any source\): rank 0 got "
                                        "no message with tag 7 from any rank within 2000 ms"):
                dist.recv(torch.empty(1), tag=7)
            elapsed = time.monotonic() - start
            self.assertGreater(elapsed, 1.9)
            self.assertLess(elapsed, 6)
        else:
            time.sleep(3)  # past rank 0's timeout, so that the barrier does not wait for it
        dist.barrier()
        dist.destroy_process_group()

    def test_new_group_and_non_members(self):
        self.init_pg()
        g = dist.new_group([0, 2])
        t = torch.full((2,), float(self.rank + 1))
        if self.rank in (0, 2):
            dist.all_reduce(t, group=g)
            self.assertEqual(t.tolist(), [4.0, 4.0])
            self.assertEqual(dist.get_world_size(g), 2)
        # Subgroups of one rank each: every rank keeps its own value, not the world's sum (6).
        sub, _ = dist.new_subgroups(group_size=1)
        self.assertEqual(dist.get_world_size(sub), 1)
        u = torch.full((3,), float(self.rank + 1))
        dist.all_reduce(u, group=sub)
        self.assertEqual(u.tolist(), [float(self.rank + 1)] * 3)
        # Subgroups {0, 2} and {1}: each sums its own members only.
        sub, _ = dist.new_subgroups_by_enumeration([[0, 2], [1]])
        u = torch.full((3,), float(self.rank + 1))
        dist.all_reduce(u, group=sub)
        self.assertEqual(u.tolist(), [4.0] * 3 if self.rank in (0, 2) else [2.0] * 3)
        dist.barrier()
        dist.destroy_process_group()

    def test_new_group_by_split(self):
        # A default group bound to a device lets torch split new groups from it
        # (mixcclCommSplit); ranks left out take part with no color.
        self.init_pg(device_id=torch.device("cpu", 0))
        g = dist.new_group([1, 2])
        self.assertEqual(self.mixccl_backend().formed_by, "store")
        if self.rank in (1, 2):
            self.assertEqual(self.mixccl_backend(g).formed_by, "split")
            t = torch.full((1,), float(self.rank))
            dist.all_reduce(t, group=g)
            self.assertEqual(t.item(), 3.0)
        dist.barrier()
        dist.destroy_process_group()


    def test_reinit_on_the_same_store(self):
        # One store kept across two groups: the second must not read the first one's unique id.
        store = dist.FileStore(f"{self.file_name}.kept", self.world_size)
        for round_ in range(2):
            dist.init_process_group("mixccl", store=store, rank=self.rank,
                                    world_size=self.world_size)
            t = torch.full((2,), float(round_ + 1))
            dist.all_reduce(t)
            self.assertEqual(t.tolist(), [3.0 * (round_ + 1)] * 2)
            dist.destroy_process_group()

    def test_all(self):
        """Every test above in one job: CTest runs this one (spawning the ranks and importing
        torch once instead of once per test saves most of their time)."""
        for name in sorted(dir(self)):
            if name.startswith("test_") and name != "test_all":
                getattr(self, name)()
        # CPU tensors on host adaptors never touch CUDA (docs/pytorch.md, "CUDA tensors").
        self.assertFalse(torch.cuda.is_initialized())


if __name__ == "__main__":
    # unittest itself, not torch's run_tests: under CI=true that one writes XML reports
    # through xmlrunner, which torch does not install.
    unittest.main()
