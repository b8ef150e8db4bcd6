"""`--survive DIR`: a job that loses ranks goes on (docs/reliability.md, "Training that
survives"). On a failed step every survivor: revokes its groups, so that the ranks waiting on
it fail at once too (survive_revoke.py), agrees with the others on the lost ranks
(survive_members.py), shrinks the world with torch.distributed.shrink_group (which gives up the
old world and every group made from it), re-plans for the devices left with mixccl-plan
(survive_plan.py), builds its new stage and groups, takes the state from the survivors
(survive_state.py; where a pipeline lost its only copy of some layers, every survivor rolls
back to the last --checkpoint, survive_checkpoint.py), writes DIR/recovery-K/ (the plan, the cluster spec it was made for, and a
checkpoint of the state it goes on from, resumable with --plan and --resume), and repeats the
step that failed."""
import os
import time

import torch.distributed as dist
from torch.distributed.distributed_c10d import SHRINK_ABORT

from .plan import role_of_rank
from .spec import InputError
from .survive_members import agree_on_survivors, announce, first_error, note_failure
from .survive_plan import replan
from .survive_revoke import revoke_groups
from .survive_state import LayersLost, held_state, take_state


def check_options(args):
    """Before the process group forms: refuse what a recovery would lack."""
    if not args.cluster:
        raise InputError("--survive needs --cluster CLUSTER.json: the planner re-plans for the "
                         "devices left")
    from .plan_and_run import find_planner
    find_planner(args.planner)


def announce_process(trainer):
    """Once the process group formed: record this rank's process for survive_members.py."""
    announce(trainer.rank)


def recover(trainer, error):
    a = trainer.args
    failed_at = time.perf_counter()
    epoch = getattr(trainer, "recoveries", 0)
    old_rank, old_plan, old_world = trainer.rank, trainer.plan, trainer.world
    note_failure(epoch, error)
    revoke_groups(trainer)  # the ranks waiting on this one fail now, and check in below
    lost, steps = agree_on_survivors(epoch, old_rank, trainer.world, trainer.step, a.timeout)
    agreed = time.perf_counter()
    survivors = sorted(steps)
    device_types = [role_of_rank(old_plan, r).device_type for r in survivors]
    world = dist.shrink_group(lost, shrink_flags=SHRINK_ABORT)
    trainer.rank, trainer.world = world.rank(), world.size()
    shrunk = time.perf_counter()
    out_dir = os.path.join(a.survive, f"recovery-{epoch + 1}")
    plan, plan_path = replan(a, device_types, out_dir, trainer.rank)
    planned = time.perf_counter()
    held = held_state(trainer.parts, trainer.optimizer)
    trainer.plan, trainer.role = plan, role_of_rank(plan, trainer.rank)
    trainer.build_rank()
    finished = steps[old_rank]
    rolled_back = None
    try:
        trainer.step = take_state(trainer, held, finished)
    except LayersLost as lost_layers:
        if not (a.checkpoint and a.checkpoint_every):
            raise
        from .survive_checkpoint import roll_back
        trainer.step = roll_back(trainer, a.checkpoint, old_world)
        rolled_back = (lost_layers, max(steps.values()))
        # The report keeps one record per step: the redone steps' records replace these.
        trainer.report.steps = [r for r in trainer.report.steps if r["step"] <= trainer.step]
    trainer.save_checkpoint(out_dir)
    dist.barrier()  # every survivor's checkpoint is written (and the old ones read) before any goes on
    if a.checkpoint and a.checkpoint_every:
        # The checkpoint folder holds the survivors' plan from now on, for a later loss.
        trainer.save_checkpoint(a.checkpoint)
        dist.barrier()
    done = time.perf_counter()
    trainer.recoveries = epoch + 1
    rep = trainer.report
    rep.world, rep.plan, rep.plan_origin, rep.is_rank0 = trainer.world, plan, plan_path, trainer.rank == 0
    # Time lost: the failed step's work until the error, and the recovery.
    lost_s = done - getattr(trainer, "step_started", failed_at)
    if trainer.rank == 0:
        first = first_error(epoch, error)  # what happened, not the revoke that reached rank 0
        print(f"mixccl.train: lost rank(s) {','.join(map(str, lost))} in step {max(steps.values()) + 1}: "
              f"{trainer.world} ranks go on with {plan_path} "
              f"(micro-batches {','.join(str(role_of_rank(plan, r).micro_batch) for r in range(trainer.world))})"
              f"; recovery {done - failed_at:.2f} s (agree {agreed - failed_at:.2f}, shrink "
              f"{shrunk - agreed:.2f}, re-plan {planned - shrunk:.2f}, state and groups "
              f"{done - planned:.2f}), time lost {lost_s:.2f} s; the error: {first}",
              flush=True)
        if rolled_back:
            lost_layers, reached = rolled_back
            redone = (f"steps {trainer.step + 1}-{reached} are done again"
                      if reached > trainer.step else "no finished step is lost")
            print(f"mixccl.train: no survivor held {', '.join(lost_layers.names[:4])}"
                  f"{' ...' if len(lost_layers.names) > 4 else ''} (a pipeline's only copy): "
                  f"every rank rolled back to the checkpoint of step {trainer.step} in "
                  f"{a.checkpoint}; {redone} (with the failed step {reached + 1})", flush=True)
