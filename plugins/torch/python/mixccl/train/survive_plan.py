"""The plan for the devices left after a failure: mixccl-plan on the cluster spec with each
device type's count cut to the survivors of that type (the model spec, so the global batch,
unchanged; the profile too when --plan-and-run measured one). The survivors keep their order
(they are renumbered in it by the shrink), so the plan taken is the best one, or else the
best of the planner's alternatives, whose ranks have the survivors' device types in that order
and which uses every survivor."""
import json
import os
import subprocess

import torch.distributed as dist

from .pipeline import PeerFailed
from .plan import parse_plan, role_of_rank
from .spec import load_json


def survivors_cluster(cluster_path, device_types):
    """The cluster spec with each type's count = how many of `device_types` (the survivors')
    are of it; types with none left are dropped."""
    obj = load_json(cluster_path, "cluster spec")
    kept = []
    for t in obj["device_types"]:
        n = device_types.count(t["name"])
        if n:
            kept.append(dict(t, count=n))
    return dict(obj, name=f"{obj.get('name', 'cluster')} survivors", device_types=kept)


def replan(args, device_types, out_dir, rank):
    """Rank 0 of the survivors plans (writing out_dir/cluster.json and out_dir/plan.json) and
    hands the plan, or its error, to the others: every survivor gets the same one, or the same
    error. Returns (Plan, its path)."""
    result = [None]
    if rank == 0:
        try:
            result[0] = ("plan", _plan_for(args, device_types, out_dir))
        except PeerFailed as e:
            result[0] = ("error", str(e))
    dist.broadcast_object_list(result, src=0)
    kind, value = result[0]
    if kind == "error":
        raise PeerFailed(value if rank == 0 else f"rank {rank}: rank 0 of the survivors: {value}")
    obj, path = value
    plan = parse_plan(obj, path)
    return plan, path


def _plan_for(args, device_types, out_dir):
    """(the plan's JSON object, its path)."""
    from .plan_and_run import find_planner
    planner = find_planner(args.planner)
    os.makedirs(out_dir, exist_ok=True)
    cluster_path = os.path.join(out_dir, "cluster.json")
    with open(cluster_path, "w") as f:
        json.dump(survivors_cluster(args.cluster, device_types), f, indent=1)
    cmd = [planner, "--model", args.model_spec, "--cluster", cluster_path, "--json", "--top", "50"]
    if args.profile_out and os.path.exists(args.profile_out):
        cmd += ["--profile", args.profile_out]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise PeerFailed(f"re-planning for the survivors failed: {' '.join(cmd)} (exit "
                         f"{proc.returncode}): {proc.stderr.strip()}")
    best = json.loads(proc.stdout)
    found = []
    for candidate in [best] + best.get("alternatives", []):
        cand = dict(candidate, global_batch_size=best["global_batch_size"],
                    seq_length=best["seq_length"])
        if "error" in cand or "stages" not in cand:
            continue
        plan = parse_plan(cand, "the survivors' plan")
        types = [role_of_rank(plan, r).device_type for r in range(plan.num_ranks)]
        found.append(plan.num_ranks)
        if types == device_types:
            path = os.path.join(out_dir, "plan.json")
            with open(path, "w") as f:
                json.dump(cand, f, indent=1)
                f.write("\n")
            return cand, path
    raise PeerFailed(f"mixccl-plan found no plan for the survivors' devices "
                     f"{','.join(device_types)} in this order using all {len(device_types)} "
                     f"(its {len(found)} plans use {sorted(set(found))} ranks): {' '.join(cmd)}")
