"""The training state after a recovery, taken from the survivors: every parameter and its AdamW
moments come from the lowest-numbered survivor that held it at the latest step any survivor
reached (data-parallel replicas hold the same values), broadcast over the shrunk world to the
ranks whose new stage holds it. A layer whose every holder was lost (a pipeline's only copy)
cannot be taken from anyone: LayersLost says which (survive.py then rolls every survivor back
to the last checkpoint, survive_checkpoint.py, or fails naming them)."""
import torch
import torch.distributed as dist

from .pipeline import PeerFailed, wait_for


class LayersLost(PeerFailed):
    """Raised alike on every survivor: no survivor holds `names` at `step`."""

    def __init__(self, rank, names, step):
        self.names, self.step = names, step
        super().__init__(f"rank {rank}: no survivor holds {', '.join(names[:4])}"
                         f"{' ...' if len(names) > 4 else ''} at step {step} (a pipeline lost "
                         "its only copy of these layers; give --checkpoint DIR "
                         "--checkpoint-every K to roll back to the last checkpoint by itself, "
                         "or restart from a checkpoint with --resume)")


def held_state(parts, optimizer):
    """{name: (weight, exp_avg or None, exp_avg_sq or None)} of this rank's parts."""
    out = {}
    for name, p in parts.named_parameters():
        st = optimizer.state.get(p, {})
        out[name] = (p.detach().cpu(), st.get("exp_avg"), st.get("exp_avg_sq"))
    return out


def take_state(trainer, held, my_step):
    """Fills trainer.parts and trainer.optimizer (just built for the new plan) from the
    survivors' `held` states; returns the step they continue from."""
    rank, world = trainer.rank, trainer.world
    mine = {"step": my_step,
            "names": {n: (list(w.shape), m is not None) for n, (w, m, _) in held.items()}}
    everyone = [None] * world
    dist.all_gather_object(everyone, mine)
    step = max(e["step"] for e in everyone)
    sources = {}
    for r, e in enumerate(everyone):
        if e["step"] != step:
            continue
        for name, (shape, moments) in e["names"].items():
            sources.setdefault(name, (r, shape, moments))
    params = dict(trainer.parts.named_parameters())
    missing = sorted(n for n in params if n not in sources)
    # Every rank checks every rank's needs: all fail alike, before any broadcast.
    need = [None] * world
    dist.all_gather_object(need, missing)
    lost = sorted({n for m in need for n in m})
    if lost:
        raise LayersLost(rank, lost, step)
    for name in sorted(sources):
        src, shape, moments = sources[name]
        numel = 1
        for d in shape:
            numel *= d
        parts = 3 if moments else 1
        flat = torch.empty(parts * numel)
        if rank == src:
            w, m, v = held[name]
            flat.copy_(torch.cat([t.reshape(-1).cpu() for t in ([w, m, v] if moments else [w])]))
        wait_for(dist.broadcast(flat, src=src, async_op=True), rank,
                 f"taking {name} from rank", src)
        p = params.get(name)
        if p is None:
            continue
        with torch.no_grad():
            p.copy_(flat[:numel].view(shape).to(p.device))
        if moments:
            trainer.optimizer.state[p] = {
                "step": torch.tensor(float(step)),
                "exp_avg": flat[numel:2 * numel].view(shape).to(p.device).clone(),
                "exp_avg_sq": flat[2 * numel:].view(shape).to(p.device).clone()}
    return step
