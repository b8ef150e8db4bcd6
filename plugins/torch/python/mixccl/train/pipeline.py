"""One rank's forward and backward passes of one step: its stage of its replica's pipeline in
the 1F1B order of train/src/schedule_1f1b.cc (plan.one_f_one_b_order), activations to the next
stage and gradients to the previous one by isend/irecv on the mixccl backend.

Our own point-to-point rather than torch.distributed.pipelining: its schedules give every stage
of a pipeline the same micro-batch count and shapes and build the stage split themselves,
while a plan fixes the split, the order (the planner's simulator prices exactly this one) and
a micro-batch size per replica; a dozen lines of isend/irecv execute it as priced."""
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

from .emulation import SlowdownIdler
from .plan import one_f_one_b_order


class PeerFailed(Exception):
    """A neighbour or a gradient group did not answer: names this rank, what it waited for and
    the rank(s) it waited on (the backend's own message, which numbers the ranks of the
    two-rank lane, follows)."""


def wait_for(work, rank, what, peers):
    try:
        work.wait()
    except dist.DistError as e:
        raise PeerFailed(f"rank {rank}: {what} {peers} failed (dead or stuck): {e}") from None


class StageTimes:
    def __init__(self):
        self.compute_s = 0.0  # includes emulated_s
        self.comm_s = 0.0
        self.emulated_s = 0.0  # slept to emulate a slower device type (emulation.py)

    def add_compute(self, idler, op):
        """The operation started at `op` (idler.start()) has computed: idle for its emulated
        device (before anything is sent: the device finishes later) and count both."""
        wall, idled = idler.finish(op)
        self.compute_s += wall + idled
        self.emulated_s += idled


class StageRunner:
    """Runs a stage (ModelParts) of a pipeline. Single-stage pipelines send nothing."""

    def __init__(self, parts, role, spec_hidden, seq_len, device, autocast_dtype, prev_rank,
                 next_rank, idler=None):
        self.parts = parts
        self.role = role
        self.hidden = spec_hidden
        self.seq_len = seq_len
        self.device = device
        self.autocast_dtype = autocast_dtype
        self.prev_rank = prev_rank  # None on the first stage
        self.next_rank = next_rank  # None on the last
        self.layers = parts.layers
        self.idler = idler or SlowdownIdler(1.0, False)  # the device's speed (emulation.py)

    def connect(self):
        """Forms the point-to-point lanes to the neighbours one at a time, before the first step.
        The backend forms a lane on first use through the torch Store, and a rank whose receive
        lane waits on the Store for its peer's id holds the Store client, so a send lane formed
        at the same moment on that rank cannot publish its own id until the wait times out:
        two new lanes of one rank must not form concurrently (they would in 1F1B's first
        send-then-receive). In this order each rank forms one lane at a time, and the chain
        of stages cannot wait in a circle."""
        one = torch.zeros(1, device=self.device)
        if self.prev_rank is not None:
            dist.irecv(one, self.prev_rank).wait()
            dist.isend(one, self.prev_rank).wait()
        if self.next_rank is not None:
            dist.isend(one, self.next_rank).wait()
            dist.irecv(one, self.next_rank).wait()

    def _sync_device(self):
        if self.device.type == "cuda":  # so that compute time is the kernels', not their launch
            torch.cuda.synchronize(self.device)

    def _forward_compute(self, x_in, tokens):
        with torch.autocast(self.device.type, dtype=self.autocast_dtype or torch.bfloat16,
                            enabled=self.autocast_dtype is not None):
            x = self.parts.embedding(tokens) if self.parts.embedding is not None else x_in
            for n, layer in enumerate(self.layers):
                block = self.parts.blocks[str(layer)]
                if n < self.role.recompute:  # keep only the block's input; rerun it in backward
                    x = checkpoint(block, x, use_reentrant=False)
                else:
                    x = block(x)
            if self.parts.head is not None:
                return self.parts.head(x)
            return x

    def run_step(self, batches, loss_scale, micro_batches):
        """batches[i] = (inputs, targets) of micro-batch i for this replica. Returns the sum of
        the stage's scaled losses (0 off the last stage) and its times."""
        times = StageTimes()
        pending = []  # isend works, kept (with their tensors) until the step ends
        saved = {}
        loss_sum = 0.0
        b = self.role.micro_batch
        for forward, i in one_f_one_b_order(self.role.stage, self.role.num_stages, micro_batches):
            if forward:
                x_in = None
                if self.prev_rank is not None:
                    t0 = time.perf_counter()
                    x_in = torch.empty(b, self.seq_len, self.hidden, device=self.device)
                    wait_for(dist.irecv(x_in, self.prev_rank), self.role.rank,
                             "receiving activations from rank", self.prev_rank)
                    x_in.requires_grad_(True)
                    times.comm_s += time.perf_counter() - t0
                op = self.idler.start()
                tokens, targets = batches[i]
                out = self._forward_compute(x_in, tokens)
                if self.next_rank is None:
                    # Sum over tokens scaled by 1/(G*T): the replicas' sums add up to the mean.
                    loss = F.cross_entropy(out.float().flatten(0, 1), targets.flatten(),
                                           reduction="sum") * loss_scale
                    loss_sum += loss.item()
                    saved[i] = (x_in, loss)
                    self._sync_device()
                    times.add_compute(self.idler, op)
                else:
                    send = out.detach().float().contiguous()
                    self._sync_device()
                    times.add_compute(self.idler, op)
                    t0 = time.perf_counter()
                    pending.append((dist.isend(send, self.next_rank), self.next_rank))
                    times.comm_s += time.perf_counter() - t0
                    saved[i] = (x_in, out)
            else:
                x_in, out = saved.pop(i)
                grad = None
                if self.next_rank is not None:
                    t0 = time.perf_counter()
                    grad = torch.empty(b, self.seq_len, self.hidden, device=self.device)
                    wait_for(dist.irecv(grad, self.next_rank), self.role.rank,
                             "receiving gradients from rank", self.next_rank)
                    times.comm_s += time.perf_counter() - t0
                op = self.idler.start()
                if grad is None:
                    out.backward()
                else:
                    out.backward(grad.to(out.dtype))
                self._sync_device()
                times.add_compute(self.idler, op)
                if self.prev_rank is not None:
                    t0 = time.perf_counter()
                    pending.append((dist.isend(x_in.grad.contiguous(), self.prev_rank),
                                    self.prev_rank))
                    times.comm_s += time.perf_counter() - t0
        t0 = time.perf_counter()
        for w, peer in pending:
            wait_for(w, self.role.rank, "sending to rank", peer)
        times.comm_s += time.perf_counter() - t0
        return loss_sum, times
