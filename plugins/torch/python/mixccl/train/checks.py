"""Refusals before training starts: a plan that does not fit the model, the job or the devices.
Every message names the file, the field and the rank(s) concerned. These checks need no
communication: every rank makes them on the same inputs and reaches the same verdict."""
import torch

from .devices import device_kind, stage_memory_bytes, stage_parameter_count
from .plan import rank_of, role_of_rank
from .spec import InputError


def size_text(n):
    return f"{n / 2**30:.2f} GiB" if n >= 2**30 else f"{n / 2**20:.1f} MiB"


def stage_ranks(plan, g, s):
    ranks = [rank_of(plan, g, r, s, t) for r in range(plan.dp(g))
             for t in range(plan.groups[g][s].tp)]
    return f"rank {ranks[0]}" if len(ranks) == 1 else "ranks " + ",".join(map(str, ranks))


def check_plan(plan, spec, spec_origin, world_size):
    o = plan.origin
    if plan.num_ranks != world_size:
        raise InputError(f"{o}: the plan runs on {plan.num_ranks} ranks, the job has {world_size}")
    if plan.seq_length and plan.seq_length != spec.seq_length:
        raise InputError(f"{o}: seq_length {plan.seq_length} differs from the model spec's "
                         f"{spec.seq_length} ({spec_origin})")
    if plan.global_batch and plan.global_batch != spec.global_batch_size:
        raise InputError(f"{o}: global_batch_size {plan.global_batch} differs from the model "
                         f"spec's {spec.global_batch_size} ({spec_origin})")
    slot = 0
    for g, stages in enumerate(plan.groups):
        nxt = 0
        for s, st in enumerate(stages):
            where = f"group {g} stage {s} ({stage_ranks(plan, g, s)})"
            if st.first_layer != nxt or st.last_layer <= st.first_layer:
                raise InputError(f"{o}: {where}: layers [{st.first_layer}, {st.last_layer}) do "
                                 f"not continue the pipeline at layer {nxt}")
            if st.tp != 1:
                raise InputError(f"{o}: {where}: tp {st.tp}; mixccl.train runs tp 1 only "
                                 "(tensor parallelism runs in mixccl-train)")
            nxt = st.last_layer
        if nxt != spec.num_layers:
            raise InputError(f"{o}: group {g}'s pipeline ends at layer {nxt}, the model spec "
                             f"{spec_origin} has num_layers {spec.num_layers}")
        slot += sum(n * mb for n, mb in stages[0].classes)
    if slot * plan.micro_batches != spec.global_batch_size:
        raise InputError(f"{o}: the replicas' micro-batches add up to {slot} sequences per slot; "
                         f"a global batch of {spec.global_batch_size} ({spec_origin}) in "
                         f"{plan.micro_batches} micro-batches needs "
                         f"{spec.global_batch_size / plan.micro_batches:g}")


def check_devices(plan, spec, device_map, cluster, cluster_origin, rank):
    """Device types against the cluster spec (every rank), memory per stage, and this rank's
    own device being present."""
    o = plan.origin
    for g, stages in enumerate(plan.groups):
        for s, st in enumerate(stages):
            where = f"group {g} stage {s} ({stage_ranks(plan, g, s)})"
            if cluster is not None and st.device_type not in cluster:
                raise InputError(f"{o}: {where}: device_type \"{st.device_type}\" is not in the "
                                 f"cluster spec {cluster_origin} (its types: "
                                 f"{', '.join(sorted(cluster))})")
    if cluster is not None:
        used = {}
        for r in range(plan.num_ranks):
            ro = role_of_rank(plan, r)
            used[ro.device_type] = used.get(ro.device_type, 0) + 1
            t = cluster[ro.device_type]
            if "memory_gib" in t:
                have = (t["memory_gib"] - t.get("reserved_gib", 0.0)) * 2**30
                need = stage_memory_bytes(spec, ro, plan.micro_batches,
                                          stage_parameter_count(spec, ro))
                if need > have:
                    raise InputError(
                        f"{o}: rank {r} (group {ro.group} stage {ro.stage}, device type "
                        f"{ro.device_type}): the stage needs {size_text(need)} (parameters, "
                        f"gradients, AdamW state, activations), the device has "
                        f"{size_text(have)} (memory_gib - reserved_gib in {cluster_origin})")
        for name, n in used.items():
            if n > cluster[name].get("count", n):
                raise InputError(f"{o}: the plan puts {n} ranks on device type {name}, the "
                                 f"cluster spec {cluster_origin} has {cluster[name]['count']}")
    mine = role_of_rank(plan, rank)
    if device_kind(mine.device_type, device_map) == "cuda" and not torch.cuda.is_available():
        raise InputError(f"rank {rank}: device type {mine.device_type} (group {mine.group} stage "
                         f"{mine.stage} in {o}) runs on cuda, but this process sees no CUDA "
                         "device (map the type to cpu with --device-map "
                         f"{mine.device_type}=cpu)")
