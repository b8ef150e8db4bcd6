"""`python -m mixccl.train` (docs/training.md, "mixccl.train")."""
import argparse
import importlib
import importlib.util
import sys

import torch.distributed as dist

from .emulation import check_options as check_emulation_options
from .pipeline import PeerFailed
from .spec import InputError, load_model_spec


def parser():
    p = argparse.ArgumentParser(
        prog="python -m mixccl.train",
        description="Train a LLaMA-style model (or your own module) from a mixccl-plan plan "
                    "on the mixccl torch backend; without --plan, one process trains the whole "
                    "model (the parity reference).")
    p.add_argument("--model-spec", required=True, help="the planner's model spec (JSON)")
    p.add_argument("--plan", help="mixccl-plan --json output: run as one rank of the job")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--data", help="a MIXTOKS1 token file (default: generated tokens)")
    p.add_argument("--report", help="write the report JSON here (rank 0)")
    p.add_argument("--micro-batches", type=int, default=1,
                   help="micro-batches per step of the single process (a plan gives its own)")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--weight-decay", type=float, default=0.1)
    p.add_argument("--grad-clip", type=float, default=1.0, help="0: off")
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"],
                   help="the single process's device")
    p.add_argument("--device-map", help="TYPE=cpu|cuda,... for the plan's device types")
    p.add_argument("--cluster", help="the planner's cluster spec: device types' memory (checked), "
                   "cpu_threads (applied) and speeds (emulated: a slower type sleeps)")
    p.add_argument("--device-type", help="with --cluster, the single process's device type")
    p.add_argument("--slowdown-base", type=float, default=1.0,
                   help="multiplies every type's emulated slowdown (--cluster): B = 3 runs the "
                   "fastest type at a third of the CPU")
    p.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    p.add_argument("--timeout", type=float, default=60.0,
                   help="seconds any communication may wait (a dead rank's error comes within it)")
    p.add_argument("--checkpoint", help="folder: save every rank's state at the end")
    p.add_argument("--checkpoint-every", type=int, default=0)
    p.add_argument("--resume", help="folder of a checkpoint of the same plan")
    p.add_argument("--auto-resume", action="store_true", help="resume from --checkpoint DIR "
                   "when it holds every rank's checkpoint (a launcher's restart: torchrun "
                   "--max-restarts), else start fresh")
    p.add_argument("--survive", metavar="DIR", help="survive lost ranks: shrink, re-plan with "
                   "mixccl-plan for --cluster's devices left, go on; each recovery's plan and "
                   "state go to DIR/recovery-K (docs/reliability.md)")
    p.add_argument("--allow-grow", action="store_true", help="with --survive DIR: a "
                   "replacement rank started with --join DIR joins at a step boundary and the "
                   "planner re-plans for the larger job (docs/reliability.md)")
    p.add_argument("--join", metavar="DIR", help="join the running job whose --survive DIR "
                   "this is, as a rank of --device-type (docs/reliability.md)")
    p.add_argument("--model-module", help="FILE.py:FUNCTION building your own model's parts "
                   "(docs/training.md, 'Your own model')")
    p.add_argument("--quiet", action="store_true", help="no per-step lines")
    g = p.add_argument_group("profiling and planning")
    g.add_argument("--profile-out", help="measure per-layer times on the --cluster's device "
                   "types present here and write the planner's profile (no training)")
    g.add_argument("--profile-micro-batches", default="1,2,4,8")
    g.add_argument("--profile-repeats", type=int, default=5)
    g.add_argument("--plan-and-run", action="store_true",
                   help="profile, plan with mixccl-plan --profile, and run the plan here")
    g.add_argument("--planner", help="mixccl-plan (default: from PATH)")
    g.add_argument("--work-dir", help="where --plan-and-run writes profile.json and plan.json")
    return p


def load_parts_factory(text, spec, seed):
    """FILE.py:FUNCTION or a module name (mixccl.train.hf:build_parts); the function is called
    as FUNCTION(spec, seed, first_layer, last_layer, with_embedding, with_head)."""
    where, sep, fn = text.rpartition(":")
    if not sep:
        raise InputError(f"--model-module {text}: give FILE.py:FUNCTION or MODULE:FUNCTION")
    try:
        if where.endswith(".py"):
            mod_spec = importlib.util.spec_from_file_location("mixccl_train_user_model", where)
            if mod_spec is None:
                raise ImportError(f"cannot load {where}")
            module = importlib.util.module_from_spec(mod_spec)
            mod_spec.loader.exec_module(module)
        else:
            module = importlib.import_module(where)
    except (ImportError, OSError) as e:
        raise InputError(f"--model-module {text}: {e}") from None
    build = getattr(module, fn, None)
    if build is None:
        raise InputError(f"--model-module {text}: {where} has no function {fn}")
    return lambda first, last, emb, head: build(spec, seed, first, last, emb, head)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    args = parser().parse_args(argv)
    from .runner import Trainer, job_rank_and_size
    rank = job_rank_and_size()[0]
    try:
        check_emulation_options(args)
        from .restart import check_options as check_restart_options
        check_restart_options(args)
        from .grow import check_options as check_grow_options
        from .grow_join import check_options as check_join_options
        check_join_options(args)
        check_grow_options(args)
        spec = load_model_spec(args.model_spec)
        if args.plan_and_run:
            from .plan_and_run import plan_and_run
            return plan_and_run(spec, args, argv)
        if args.profile_out:
            if not args.cluster:
                raise InputError("--profile-out needs --cluster CLUSTER.json (its device types)")
            from .profiler import write_profile
            write_profile(spec, args)
            return 0
        factory = load_parts_factory(args.model_module, spec, args.seed) if args.model_module else None
        joined = None
        if args.join:
            from .grow_join import request_to_join
            joined = request_to_join(args, spec)
        Trainer(args, spec, factory, joined).train()
    except InputError as e:
        print(f"mixccl.train: {e}", file=sys.stderr, flush=True)
        return 1
    except PeerFailed as e:
        print(f"mixccl.train: {e}", file=sys.stderr, flush=True)
        return 1
    except dist.DistError as e:
        # A dead or stuck peer: the backend's error names it (within --timeout).
        print(f"mixccl.train: rank {rank}: communication failed: {e}", file=sys.stderr, flush=True)
        return 1
    return 0
