"""`--auto-resume`: a job that a launcher restarts whole (torchrun --max-restarts N, whose
elastic agent stops every worker when one fails and starts them all again with the same
arguments) goes on from the last checkpoint in --checkpoint DIR instead of from step 0. On the
first start there is none and every rank starts fresh; every rank must find one, or none, of
the same step, else the job stops (a rank lost between its peers' writes of one checkpoint
leaves files of two steps, which would train on inconsistent state)."""
import os

import torch.distributed as dist

from .spec import InputError


def check_options(args):
    if args.auto_resume and not args.checkpoint:
        raise InputError("--auto-resume needs --checkpoint DIR (the folder it resumes from)")
    if args.auto_resume and args.resume:
        raise InputError("--auto-resume resumes from --checkpoint DIR: give it or --resume, "
                         "not both")


def auto_resume(trainer):
    """Loads this rank's checkpoint from --checkpoint when every rank has one of the same step;
    returns the step resumed from (0: a fresh start)."""
    folder = trainer.args.checkpoint
    present = os.path.exists(trainer.checkpoint_path(folder))
    if present:
        trainer.load_checkpoint(folder)
    if not trainer.distributed:
        return trainer.step
    everyone = [None] * trainer.world
    dist.all_gather_object(everyone, trainer.step if present else None)
    if len(set(everyone)) != 1:
        found = ", ".join(f"rank {r}: {'none' if s is None else f'step {s}'}"
                          for r, s in enumerate(everyone))
        raise InputError(f"--auto-resume {folder}: the ranks' checkpoints differ ({found}); "
                         "resume from a folder whose every rank's file is of one step")
    if trainer.rank == 0 and present:
        print(f"mixccl.train: --auto-resume: every rank resumes from the checkpoint of step "
              f"{trainer.step} in {folder}", flush=True)
    return trainer.step
