"""Recovery when a pipeline lost its only copy of some layers (--survive with --checkpoint DIR
--checkpoint-every K): no survivor can hand those layers over, so every survivor rolls back to
the last checkpoint in DIR, the lost ranks' files included (DIR must be storage every rank
reaches: the lost rank's file is read by the survivors). Every rank takes its new stage's
weights and AdamW moments from the old ranks' files and goes on from their step, so the model,
the optimizer and the data position (a function of the step) agree again; the steps since the
checkpoint are done again.

A rank's file names its parameters in the optimizer's order (`param_names`), which is how its
AdamW moments, stored by index, are found again under another plan."""
import os

import torch
import torch.distributed as dist

from .pipeline import PeerFailed


def optimizer_param_names(parts, optimizer):
    """The names of `optimizer`'s parameters in its state_dict's index order."""
    name_of = {id(p): n for n, p in parts.named_parameters()}
    return [name_of[id(p)] for g in optimizer.param_groups for p in g["params"]]


def _read_rank_files(folder, old_world):
    """{old rank: its checkpoint} of `folder`, loaded lazily (mmap): only what is used is read."""
    files = {}
    for r in range(old_world):
        path = os.path.join(folder, f"rank{r}.pt")
        if not os.path.exists(path):
            raise PeerFailed(f"no checkpoint {path} of old rank {r} to roll back to (every "
                             f"rank's file must be on storage the survivors reach)")
        state = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
        if state.get("world") != old_world or "param_names" not in state:
            raise PeerFailed(f"{path} is not a checkpoint of the {old_world}-rank plan that "
                             f"failed (it holds a {state.get('world')}-rank job's state"
                             f"{'' if 'param_names' in state else ' without parameter names'})")
        files[r] = state
    steps = sorted({s["step"] for s in files.values()})
    if len(steps) != 1:
        raise PeerFailed(f"the checkpoints in {folder} are of different steps "
                         f"({', '.join(f'rank {r}: ' + str(s['step']) for r, s in files.items())}): "
                         "a rank was lost between its peers' checkpoint writes")
    return files, steps[0]


def _moments_by_name(state):
    """{name: (step, exp_avg, exp_avg_sq)} of a rank file's AdamW state."""
    opt = state["optimizer"]["state"]
    out = {}
    for i, name in enumerate(state["param_names"]):
        st = opt.get(i, opt.get(str(i)))
        if st is not None:
            out[name] = (st["step"], st["exp_avg"], st["exp_avg_sq"])
    return out


def roll_back(trainer, folder, old_world):
    """Fills trainer.parts and trainer.optimizer (just built for the new plan) from the
    checkpoint files of the old plan's ranks in `folder`; returns that checkpoint's step. Every
    survivor succeeds or all fail with the same message, before any state changes."""
    rank = trainer.rank
    error, step, found = None, None, {}
    try:
        files, step = _read_rank_files(folder, old_world)
        params = dict(trainer.parts.named_parameters())
        for r, state in files.items():
            moments = _moments_by_name(state)
            for name in params:
                if name not in found and name in state["model"]:
                    found[name] = (state["model"][name], moments.get(name))
        missing = sorted(n for n in params if n not in found)
        if missing:
            error = (f"no checkpoint in {folder} holds {', '.join(missing[:4])}"
                     f"{' ...' if len(missing) > 4 else ''}")
    except (OSError, RuntimeError, KeyError, PeerFailed) as e:
        error = str(e)
    everyone = [None] * trainer.world
    dist.all_gather_object(everyone, (error, step))
    errors = [(r, e) for r, (e, _) in enumerate(everyone) if e]
    if errors:
        r, e = errors[0]
        raise PeerFailed(f"rank {rank}: rolling back to the checkpoint failed: "
                         f"{e if r == rank else f'rank {r} of the survivors: {e}'}")
    if len({s for _, s in everyone}) != 1:
        raise PeerFailed(f"rank {rank}: the survivors read checkpoints of different steps "
                         f"({sorted({s for _, s in everyone})}) in {folder}")
    params = dict(trainer.parts.named_parameters())
    with torch.no_grad():
        for name, (weight, moments) in found.items():
            p = params[name]
            p.copy_(weight.to(p.device))
            if moments is not None:
                st, m, v = moments
                trainer.optimizer.state[p] = {"step": st.clone(),
                                              "exp_avg": m.to(p.device).clone(),
                                              "exp_avg_sq": v.to(p.device).clone()}
    return step
