"""Emulated device speeds: the semantics of mixccl-train's `--cluster` (train/src/speed_emulation.cc,
docs/training.md "Emulated device speeds"), so that one cluster spec serves both trainers.

A device type k times slower than the cluster spec's fastest (k = the fastest type's
achievable FLOP/s / its own, peak_tflops x achievable_fraction; 1 for a type with cpu_threads,
whose speed is real), times `--slowdown-base B`, computes each forward and backward and then
sleeps until the operation has lasted k x B times its compute time. Sleeping leaves the CPU to
the other ranks, so a machine of 2 cores can host a fast and a slow rank each at its own speed.
The compute time is the thread's CPU time with one torch thread on CPU (a device of the
emulated type is not preempted by the other processes of the machine that emulates it), wall
time otherwise (other threads' CPU time is not the calling thread's; a GPU's kernels are not
CPU time). A sleep's overshoot and a preempted operation's overrun are paid back from the
following idles, so that over a step the emulated compute stays k x B times the compute time."""
import time

import torch

from .spec import InputError


def achievable_flops(t, cluster_origin):
    try:
        return float(t["peak_tflops"]) * float(t["achievable_fraction"])
    except (KeyError, TypeError, ValueError):
        raise InputError(f"cluster spec {cluster_origin}: device type \"{t['name']}\" needs "
                         "numbers 'peak_tflops' and 'achievable_fraction' (its emulated speed)"
                         ) from None


def type_slowdown(cluster, name, cluster_origin, base=1.0):
    """k x base for device type `name` of the cluster spec (load_cluster's dict)."""
    t = cluster[name]
    if t.get("cpu_threads"):
        return base
    fastest = max(achievable_flops(x, cluster_origin) for x in cluster.values())
    return base * fastest / achievable_flops(t, cluster_origin)


def uses_cpu_clock(device):
    """Whether this process's compute is timed in the calling thread's CPU time."""
    return device.type == "cpu" and torch.get_num_threads() == 1


class SlowdownIdler:
    """Idles after each operation so that it lasts `slowdown` x its compute time. Use:
    `op = idler.start()`, compute, then `wall, idled = idler.finish(op)`."""

    def __init__(self, slowdown, cpu_clock):
        self.slowdown = slowdown
        self.cpu_clock = cpu_clock
        self.behind_s = 0.0  # time spent beyond the emulated timeline, not paid back yet

    def _compute_clock(self):
        return time.thread_time() if self.cpu_clock else time.perf_counter()

    def start(self):
        return time.perf_counter(), self._compute_clock()

    def compute_seconds(self, op):
        return self._compute_clock() - op[1]

    def finish(self, op):
        """(wall seconds of the operation, seconds idled after it)."""
        wall = time.perf_counter() - op[0]
        return wall, self.idle(self.compute_seconds(op), wall)

    def idle(self, compute_s, wall_s):
        if self.slowdown <= 1.0:
            return 0.0
        ask = self.slowdown * compute_s - wall_s - self.behind_s
        if ask <= 0.0:  # the operation (or an earlier one) already used up this idle
            self.behind_s = -ask
            return 0.0
        t0 = time.perf_counter()
        time.sleep(ask)
        idled = time.perf_counter() - t0
        self.behind_s = idled - ask
        return idled


def check_options(args):
    """The emulation's options, as mixccl-train checks its own (train/src/train_cli.cc)."""
    if args.slowdown_base < 1.0:
        raise InputError(f"--slowdown-base wants a number >= 1, got {args.slowdown_base:g}")
    if args.slowdown_base != 1.0 and not args.cluster:
        raise InputError("--slowdown-base scales the speeds of --cluster CLUSTER.json; give both")
    if args.device_type and not args.cluster:
        raise InputError("--device-type names a type of --cluster CLUSTER.json; give both")
    if args.device_type and args.plan:
        raise InputError("with --plan each rank's device type comes from the plan: leave out "
                         "--device-type")
    if (args.cluster and not args.plan and not args.device_type and not args.profile_out
            and not args.plan_and_run):
        raise InputError("--cluster emulates device speeds: a single process needs "
                         "--device-type NAME")


def rank_idler(cluster, cluster_origin, device_type, base, device):
    """The idler of a rank of `device_type` (None: no --cluster, the machine's speed)."""
    if cluster is None:
        return SlowdownIdler(1.0, False)
    if device_type not in cluster:
        raise InputError(f"cluster spec {cluster_origin}: no device type \"{device_type}\" "
                         f"(--device-type; its types: {', '.join(sorted(cluster))})")
    return SlowdownIdler(type_slowdown(cluster, device_type, cluster_origin, base),
                         uses_cpu_clock(device))
