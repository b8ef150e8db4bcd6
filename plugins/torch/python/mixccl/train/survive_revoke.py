"""The first thing a survivor does when a step fails (--survive): revoke every group it is in,
so that the ranks waiting on it hear of the failure at once. A lost rank's death reaches at
once only the ranks that wait on it; a rank waiting on one of those (the stage upstream of a
lost one, a replica in a gradient sum with it) would wait until its own timeout, while the
rank it waits on waits for it in the agreement on the survivors (survive_members.py). A
revoked rank revokes in turn, so the failure runs along every chain of waits.

The groups are revoked, not aborted: the survivors shrink the world next (SHRINK_ABORT), and
shrinking the world aborts the other groups."""
import torch
import torch.distributed as dist


def revoke_groups(trainer):
    """Revokes the world (its point-to-point lanes included) and this rank's gradient groups."""
    groups = [dist.group.WORLD] + [g for g, *_ in trainer.sync.syncs if g is not None]
    for group in groups:
        group._get_backend(torch.device("cpu")).revoke()
