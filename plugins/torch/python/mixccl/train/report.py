"""The report JSON (rank 0 writes it) and the progress line per step: per step the loss, the
step time, tokens/s, the gradient norm, and every rank's compute / communication / idle time,
the part of its compute slept to emulate a slower device, peak memory, device (cpu or cuda)
and compute dtype (bf16 under autocast, else fp32). Communication includes the waits for the
neighbours' activations and gradients and for the gradient sums; idle is the rest (data,
optimizer, bookkeeping). The summary leaves out the first step (first-touch allocations, the
lanes' first use) when there are several, as mixccl-train's does."""
import json
import statistics

import torch
import torch.distributed as dist

from .pipeline import wait_for


class Report:
    def __init__(self, args, spec, plan, world, rank):
        self.args = args
        self.is_rank0 = rank == 0
        self.spec = spec
        self.world = world
        self.plan_origin = plan.origin if plan is not None else None
        self.plan = plan
        self.steps = []
        self.behind_s = []  # every rank's, after the last step

    def add_step(self, trainer, step, loss, norm, step_s, times, peak_bytes):
        # Where the rank computed, as a number so it travels in the same all_gather.
        where = 0.0 if trainer.device.type != "cuda" else (2.0 if trainer.autocast else 1.0)
        mine = torch.tensor([times.compute_s, times.comm_s,
                             max(step_s - times.compute_s - times.comm_s, 0.0), float(peak_bytes),
                             where, times.emulated_s, trainer.idler.behind_s],
                            dtype=torch.float64)
        if trainer.distributed:
            everyone = [torch.zeros(7, dtype=torch.float64) for _ in range(self.world)]
            wait_for(dist.all_gather(everyone, mine, async_op=True), trainer.rank,
                     "gathering the step's times from ranks", f"0-{self.world - 1}")
        else:
            everyone = [mine]
        tokens = self.spec.global_batch_size * self.spec.seq_length
        rec = {"step": step, "loss": loss, "grad_norm": norm, "step_s": step_s,
               "tokens_per_s": tokens / step_s,
               "ranks": [{"rank": r, "compute_s": float(v[0]), "comm_s": float(v[1]),
                          "idle_s": float(v[2]), "emulated_s": float(v[5]),
                          "peak_memory_bytes": int(v[3]),
                          "device": "cpu" if v[4] == 0 else "cuda",
                          "compute_dtype": "bf16" if v[4] == 2 else "fp32"}
                         for r, v in enumerate(everyone)]}
        self.behind_s = [float(v[6]) for v in everyone]
        self.steps.append(rec)
        if trainer.rank == 0 and not self.args.quiet:
            r0 = rec["ranks"][0]
            print(f"step {step:4d}/{self.args.steps}  loss {loss:.6f}  step "
                  f"{step_s * 1e3:.1f} ms  {rec['tokens_per_s']:.0f} tok/s  |g| {norm:.3f}  "
                  f"compute {r0['compute_s'] * 1e3:.1f} ms  comm {r0['comm_s'] * 1e3:.1f} ms",
                  flush=True)

    def finish(self):
        if not self.args.report or not self.is_rank0:
            return
        from .devices import load_cluster
        from .emulation import type_slowdown
        from .plan import role_of_rank
        cluster = load_cluster(self.args.cluster) if self.args.cluster else None

        def slowdown(device_type):
            if cluster is None:
                return 1.0
            return type_slowdown(cluster, device_type, self.args.cluster, self.args.slowdown_base)
        roles = []
        for r in range(self.world):  # the fields of mixccl-train's report (train/bench/plots.py)
            ro = role_of_rank(self.plan, r) if self.plan is not None else None
            roles.append({"rank": r, "replica": ro.replica_number if ro else 0,
                          "stage": ro.stage if ro else 0,
                          "layers": [ro.first_layer, ro.last_layer] if ro else
                          [0, self.spec.num_layers],
                          "micro_batch": ro.micro_batch if ro else self.spec.global_batch_size,
                          "device_type": ro.device_type if ro else (self.args.device_type or ""),
                          "slowdown": slowdown(ro.device_type if ro else self.args.device_type),
                          "emulation_behind_s": self.behind_s[r] if self.steps else 0.0})
        kept = self.steps[1:] or self.steps
        summary = {}
        if kept:
            mean = statistics.mean(x["step_s"] for x in kept)
            summary = {"final_loss": self.steps[-1]["loss"], "mean_step_time_s": mean,
                       "tokens_per_s": self.spec.global_batch_size * self.spec.seq_length / mean,
                       "total_time_s": sum(x["step_s"] for x in self.steps)}
        out = {"model": self.spec.name, "plan": self.plan_origin, "ranks": roles,
               "global_batch_size": self.spec.global_batch_size,
               "seq_length": self.spec.seq_length, "seed": self.args.seed, "steps": self.steps,
               "summary": summary}
        with open(self.args.report, "w") as f:
            json.dump(out, f, indent=1)
            f.write("\n")
