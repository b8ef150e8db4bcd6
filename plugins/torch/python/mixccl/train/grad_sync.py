"""Data-parallel gradient sums across replicas of different shapes. Groups may split the layers
differently, so gradients are summed per interval between consecutive stage boundaries of all
groups (plan.gradient_cuts): each replica holds an interval on exactly one rank, and the ranks
holding it form one subgroup, made once. Every token of the global batch weighs 1/(G*T) in
the loss, so each replica's backward already carries its share and the sums are plain sums
(never averages): the update equals the single-device one for any micro-batch sizes.

A tied embedding has a copy on every rank holding the embedding or the head; its gradient is
summed over all of them (Megatron's embedding group)."""
import torch
import torch.distributed as dist

from .pipeline import wait_for
from .plan import gradient_cuts, role_of_rank


def _interval_of(cuts, layer):
    for k in range(len(cuts) - 1):
        if cuts[k] <= layer < cuts[k + 1]:
            return k
    raise ValueError(layer)


class GradientSync:
    def __init__(self, plan, num_layers, rank, parts, tied):
        self.rank = rank
        cuts = gradient_cuts(plan, num_layers)
        roles = [role_of_rank(plan, r) for r in range(plan.num_ranks)]
        holders = []  # per interval, the ranks holding it
        for k in range(len(cuts) - 1):
            holders.append([ro.rank for ro in roles
                            if ro.first_layer <= cuts[k] and cuts[k + 1] <= ro.last_layer])
        tied_ranks = sorted(ro.rank for ro in roles if ro.has_embedding or ro.has_head) if tied else []
        # dist.new_group is collective over the whole job: every rank creates every group in
        # the same order, members or not. Groups of one rank need no communication.
        self.syncs = []  # (group or None, owner rank, [params])
        tied_name = parts.tied_parameter_name() if tied else None
        params = dict(parts.named_parameters())
        by_interval = [[] for _ in holders]
        for name, p in params.items():
            if name == tied_name:
                continue
            layer = parts.parameter_layer(name)
            k = 0 if layer == -1 else (len(holders) - 1 if layer is None else _interval_of(cuts, layer))
            by_interval[k].append(p)
        for k, members in enumerate(holders):
            group = dist.new_group(members) if len(members) > 1 else None
            if rank in members and by_interval[k]:
                self.syncs.append((group, min(members), by_interval[k], members))
        if tied:
            group = dist.new_group(tied_ranks) if len(tied_ranks) > 1 else None
            if tied_name is not None:
                self.syncs.append((group, min(tied_ranks), [params[tied_name]], tied_ranks))

    def all_reduce(self):
        """Sums each interval's gradients over its holders (one flat buffer per interval)."""
        for group, _, params, members in self.syncs:
            if group is None:
                continue
            grads = [p.grad for p in params]
            flat = torch.cat([g.reshape(-1) for g in grads])
            wait_for(dist.all_reduce(flat, group=group, async_op=True), self.rank,
                     "the gradient sum with ranks", ",".join(map(str, members)))
            offset = 0
            for g in grads:
                g.copy_(flat[offset:offset + g.numel()].view_as(g))
                offset += g.numel()

    def owned_square_sum(self):
        """Sum of squared gradients this rank counts in the global norm: each summed gradient
        once, on the lowest rank holding it (the sum over all ranks is the single-process norm)."""
        total = torch.zeros((), dtype=torch.float64)
        for _, owner, params, _ in self.syncs:
            if owner == self.rank:
                for p in params:
                    total += p.grad.detach().double().pow(2).sum().cpu()
        return total
