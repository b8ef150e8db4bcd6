"""The training loop of one rank: build the stage, then per step the pipeline passes, the
data-parallel gradient sums, the global gradient norm and clipping, AdamW; report, checkpoint."""
import datetime
import os
import resource
import sys
import time

import torch
import torch.distributed as dist

from .checks import check_devices, check_plan
from .data import TokenData
from .devices import device_kind, load_cluster, local_device, parse_device_map
from .emulation import rank_idler
from .grad_sync import GradientSync
from .model import build_llama_parts, weight_decays
from .pipeline import PeerFailed, StageRunner, wait_for
from .plan import Plan, Stage, load_plan, rank_of, role_of_rank
from .report import Report
from .spec import InputError


def job_rank_and_size():
    """mixcclrun's variables first (as mixccl's own launcher detection), then torchrun's/srun's."""
    for r, n in (("MIXCCL_RANK", "MIXCCL_NRANKS"), ("RANK", "WORLD_SIZE"),
                 ("SLURM_PROCID", "SLURM_NTASKS")):
        if r in os.environ:
            return int(os.environ[r]), int(os.environ[n])
    return 0, 1


def single_process_plan(spec, micro_batches):
    """The parity reference: one rank, the whole model, the global batch in M micro-batches."""
    if spec.global_batch_size % micro_batches:
        raise InputError(f"--micro-batches {micro_batches} does not divide global_batch_size "
                         f"{spec.global_batch_size}")
    st = Stage("cpu", 0, spec.num_layers, 1, 0, [(1, spec.global_batch_size // micro_batches)])
    p = Plan(origin="single process", micro_batches=micro_batches, groups=[[st]],
             blocks=[[("cpu", 1, 1)]])
    return p


def init_process_group(rank, world, timeout_s):
    timeout = datetime.timedelta(seconds=timeout_s)
    if "MIXCCL_COMM_ID" in os.environ and "MASTER_ADDR" not in os.environ:
        # Under mixcclrun (one host): a file store named after the job's rendezvous address.
        # The variable itself must go before mixccl reads it: with it every unique id would be
        # that one address, and the backend's many communicators (a lane per point-to-point
        # peer, a subgroup per gradient interval) would all try to listen there.
        # The launcher's pid in the name keeps a later job on a reused port from reading it.
        path = (f"/tmp/mixccl-train-store-{os.environ.pop('MIXCCL_COMM_ID').replace(':', '-')}"
                f"-{os.getppid()}")
        import mixccl.torch  # noqa: F401  registers the "mixccl" backend
        dist.init_process_group("mixccl", init_method="file://" + path, rank=rank,
                                world_size=world, timeout=timeout)
        return path
    else:
        import mixccl.torch  # noqa: F401
        dist.init_process_group("mixccl", rank=rank, world_size=world, timeout=timeout)
        return None


def peak_memory_bytes(device):
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device)
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # the process's peak RSS


class Trainer:
    def __init__(self, args, spec, parts_factory=None, joined=None):
        self.args = args
        self.spec = spec
        # joined: a replacement rank (--join), whose rank, world and plan are the job's answer.
        self.rank, self.world = (joined.rank, joined.world) if joined else job_rank_and_size()
        self.distributed = args.plan is not None or joined is not None
        device_map = parse_device_map(args.device_map)
        cluster = load_cluster(args.cluster) if args.cluster else None
        if self.distributed:
            self.plan = joined.plan if joined else load_plan(args.plan)
            check_plan(self.plan, spec, args.model_spec, self.world)
            check_devices(self.plan, spec, device_map, cluster, args.cluster, self.rank)
            if args.survive:
                from .survive import check_options
                check_options(args)
        else:
            if self.world != 1:
                raise InputError(f"rank {self.rank}: without --plan mixccl.train runs as one "
                                 f"process, the job has {self.world} (give --plan)")
            self.plan = single_process_plan(spec, args.micro_batches)
        self.role = role_of_rank(self.plan, self.rank)
        kind = device_kind(self.role.device_type, device_map) if self.distributed else args.device
        if kind == "cuda" and not torch.cuda.is_available():
            raise InputError("--device cuda: this process sees no CUDA device")
        local_rank = next((int(os.environ[v]) for v in ("LOCAL_RANK", "MIXCCL_LOCAL_RANK",
                                                         "SLURM_LOCALID") if v in os.environ), 0)
        self.device = local_device(kind, local_rank)
        my_type = self.role.device_type if self.distributed else args.device_type
        if cluster is not None and "cpu_threads" in cluster.get(my_type, {}):
            torch.set_num_threads(int(cluster[my_type]["cpu_threads"]))
        elif args.threads:
            torch.set_num_threads(args.threads)
        # The device type's speed (emulation.py): after the thread count, which picks its clock.
        self.idler = rank_idler(cluster, args.cluster, my_type, args.slowdown_base, self.device)
        # bf16 autocast where the model spec computes in bf16 and the rank has a GPU; CPU ranks
        # (and fp32 specs) compute in fp32.
        self.autocast = (torch.bfloat16 if self.device.type == "cuda" and spec.param_dtype == "bf16"
                         else None)
        self.data = TokenData.open(args.data) if args.data else TokenData.generated(spec.vocab_size)
        self.data.check(spec)
        if self.distributed:
            self.store_file = (joined.init_process_group() if joined else
                               init_process_group(self.rank, self.world, args.timeout))
        self.parts_factory = parts_factory or (
            lambda f, l, e, h: build_llama_parts(spec, f, l, e, h, args.seed))
        if self.distributed and args.survive:
            from .survive import announce_process
            announce_process(self)
            from .grow import announce_job
            announce_job(self)  # DIR/job.json: where a replacement finds the job (--join DIR)
        self.build_rank()
        self.step = 0
        if joined:
            joined.take_state(self)  # the job's state at the join, from the replicas
        elif args.resume:
            self.load_checkpoint(args.resume)
        elif args.auto_resume:
            from .restart import auto_resume
            auto_resume(self)
        self.report = Report(args, spec, self.plan if self.distributed else None, self.world,
                             self.rank)

    def build_rank(self):
        """This rank's share of self.plan as self.role: its layers, the lanes to its pipeline
        neighbours, its gradient groups and its optimizer (again after a recovery, survive.py)."""
        ro, spec, args = self.role, self.spec, self.args
        torch.manual_seed(args.seed)
        self.parts = self.parts_factory(ro.first_layer, ro.last_layer, ro.has_embedding,
                                        ro.has_head)
        self.parts.to(self.device)
        g, rep, s = ro.group, ro.replica, ro.stage
        prev_rank = rank_of(self.plan, g, rep, s - 1) if s > 0 else None
        next_rank = rank_of(self.plan, g, rep, s + 1) if s < ro.num_stages - 1 else None
        self.stage = StageRunner(self.parts, ro, spec.hidden_size, spec.seq_length, self.device,
                                 self.autocast, prev_rank, next_rank, self.idler)
        if self.distributed:
            self.stage.connect()
        self.sync = GradientSync(self.plan, spec.num_layers, self.rank, self.parts,
                                 spec.tie_embeddings)
        params = list(self.parts.parameters())
        self.optimizer = torch.optim.AdamW(
            [{"params": [p for p in params if weight_decays(p)], "weight_decay": args.weight_decay},
             {"params": [p for p in params if not weight_decays(p)], "weight_decay": 0.0}],
            lr=args.lr, betas=(0.9, 0.95), eps=1e-8, foreach=False)

    # Checkpoints: one file per rank (its stage's weights, its AdamW state, the step: the data
    # position is a function of the step).
    def checkpoint_path(self, folder):
        return os.path.join(folder, f"rank{self.rank}.pt")

    def save_checkpoint(self, folder):
        from .survive_checkpoint import optimizer_param_names
        os.makedirs(folder, exist_ok=True)
        path = self.checkpoint_path(folder)
        # Written whole, then renamed: a rank lost while writing leaves the previous file.
        torch.save({"step": self.step, "rank": self.rank, "world": self.world,
                    "layers": [self.role.first_layer, self.role.last_layer],
                    "model": self.parts.state_dict(), "optimizer": self.optimizer.state_dict(),
                    "param_names": optimizer_param_names(self.parts, self.optimizer)},
                   path + ".part")
        os.replace(path + ".part", path)

    def load_checkpoint(self, folder):
        path = self.checkpoint_path(folder)
        if not os.path.exists(path):
            raise InputError(f"--resume {folder}: rank {self.rank} has no checkpoint {path}")
        state = torch.load(path, map_location=self.device, weights_only=True)
        mine = [self.role.first_layer, self.role.last_layer]
        if state["world"] != self.world or state["layers"] != mine:
            raise InputError(f"--resume {folder}: rank {self.rank}'s checkpoint holds layers "
                             f"{state['layers']} of a {state['world']}-rank job; this rank runs "
                             f"layers {mine} of {self.world} (resume the same plan)")
        self.parts.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.step = state["step"]

    def batches(self, step):
        """This replica's (inputs, targets) of each micro-batch slot of step `step` (0-based)."""
        g, m, ro = self.spec.global_batch_size, self.plan.micro_batches, self.role
        slot = g // m
        out = []
        for i in range(m):
            x, y = self.data.sequences(step * g + i * slot + ro.slot_offset, ro.micro_batch,
                                       self.spec.seq_length)
            out.append((x.to(self.device), y.to(self.device)))
        return out

    def train_step(self):
        t_start = time.perf_counter()
        for p in self.parts.parameters():
            p.grad = None
        batches = self.batches(self.step)
        scale = 1.0 / (self.spec.global_batch_size * self.spec.seq_length)
        loss, times = self.stage.run_step(batches, scale, self.plan.micro_batches)
        for p in self.parts.parameters():  # a parameter unused in the step still gets summed
            if p.grad is None:
                p.grad = torch.zeros_like(p)
        t0 = time.perf_counter()
        self.sync.all_reduce()
        sums = torch.tensor([loss, float(self.sync.owned_square_sum())], dtype=torch.float64)
        if self.distributed:
            wait_for(dist.all_reduce(sums, async_op=True), self.rank,
                     "the loss and gradient-norm sum with ranks", f"0-{self.world - 1}")
        times.comm_s += time.perf_counter() - t0
        loss, norm = float(sums[0]), float(sums[1]) ** 0.5
        if self.args.grad_clip > 0 and norm > self.args.grad_clip:
            coef = self.args.grad_clip / (norm + 1e-6)
            for p in self.parts.parameters():
                p.grad.mul_(coef)
        self.optimizer.step()
        self.step += 1
        step_s = time.perf_counter() - t_start
        self.report.add_step(self, self.step, loss, norm, step_s, times,
                             peak_memory_bytes(self.device))

    def train(self):
        a = self.args
        while self.step < a.steps:
            try:
                self.step_started = time.perf_counter()  # survive.py counts the time lost from it
                self.train_step()
                if a.allow_grow:
                    from .grow import take_joiner
                    take_joiner(self)  # a replacement that waits joins here (grow.py)
            except (PeerFailed, dist.DistError) as e:
                if not (self.distributed and a.survive):
                    raise
                from .survive import recover
                recover(self, e)  # the survivors go on from the step that failed
                continue
            if a.checkpoint and a.checkpoint_every and self.step % a.checkpoint_every == 0:
                self.save_checkpoint(a.checkpoint)
        if a.checkpoint:
            self.save_checkpoint(a.checkpoint)
        self.report.finish()
        if self.distributed and a.survive:
            from .grow import job_finished
            job_finished(self)
        if self.distributed:
            dist.barrier()
            dist.destroy_process_group()
            if self.store_file and self.rank == 0:  # every rank passed the barrier: unused now
                try:
                    os.unlink(self.store_file)
                except FileNotFoundError:
                    pass
