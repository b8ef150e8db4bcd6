#!/usr/bin/env python3
"""The plan files of accel.sh (the method of train/bench/accel_ratio.sh, step 2), from the
planner's output in OUT: plans-top.json (the mixed cluster) and plan-alone-<type>.json.

  accel_plans.py OUT CLUSTER MBV|all

Writes OUT/plan-<name>.json for every plan to run, OUT/plans.json ({names, same}: a plan
identical to one listed before it runs once, under the first name) and OUT/runs.txt.
  cand1           the planner's first choice; cand2.. its other structures (--top), each
                  at the micro-batch count the planner chose for it
  mb<M>           (MBV a number) cand1's layout at up to MBV other micro-batch counts
  uniform         every micro-batch slot split evenly over the types, each device holding
                  the whole model
  all             instead of mb<M>: every structure the planner lists at every micro-batch
                  count M dividing the global batch whose slot its replicas can share (each
                  replica keeps its share of the slot, rounded, at least one sequence), as
                  cand<N> after the planner's own; the layer split stays the one the planner
                  chose for the structure (mixccl-plan reports one split per structure)."""
import json
import sys

out, cluster_path, mode = sys.argv[1], sys.argv[2], sys.argv[3]
cluster = json.load(open(cluster_path))
types = [t["name"] for t in cluster["device_types"]]
top = json.load(open(f"{out}/plans-top.json"))
G, T = top["global_batch_size"], top["seq_length"]


def plan_file(name, p):
    p = {k: v for k, v in p.items() if k != "alternatives"}
    p["global_batch_size"], p["seq_length"] = G, T  # an alternative lacks the batch fields
    json.dump(p, open(f"{out}/plan-{name}.json", "w"), indent=1)


def with_micro_batches(p, m):
    """p at m micro-batches: every replica's share of the slot kept (rounded, >= 1); None when
    the slot cannot hold them or the shares do not add up to it."""
    slot = G // m
    old = sum(s["micro_batch"] * s["dp"] for s in p["stages"] if s["stage"] == 0)
    firsts = [s for s in p["stages"] if s["stage"] == 0]
    shares = [max(1, round(s["micro_batch"] * slot / old)) for s in firsts]
    # Give the rounding's difference to the largest share (the fastest replica's).
    shares[shares.index(max(shares))] += slot - sum(b * s["dp"] for b, s in zip(shares, firsts))
    if min(shares) < 1 or sum(b * s["dp"] for b, s in zip(shares, firsts)) != slot:
        return None
    per_group = {s["group"]: b for s, b in zip(firsts, shares)}
    q = dict(p, micro_batches=m, stages=[dict(s, micro_batch=per_group[s["group"]])
                                         for s in p["stages"]])
    q.pop("predicted", None)  # the planner's numbers were for its own micro-batch count
    return q


cands = [top] + top.get("alternatives", [])
names = []
for i, c in enumerate(cands, 1):
    plan_file(f"cand{i}", c)
    names.append(f"cand{i}")
variant_names = []
if mode == "all":
    n = len(cands)
    for c in cands:
        for m in (d for d in range(1, G + 1) if G % d == 0):
            if m == c["micro_batches"]:
                continue
            q = with_micro_batches(c, m)
            if q is not None:
                n += 1
                plan_file(f"cand{n}", q)
                names.append(f"cand{n}")
else:
    # cand1's layout with other micro-batch counts, nearest first (accel_ratio.sh's E_mb).
    first = json.load(open(f"{out}/plan-cand1.json"))
    m0 = first["micro_batches"]
    for f in (2, 3, 4, 6, 8):
        for m in (m0 * f, m0 // f if m0 % f == 0 else 0):
            if len(variant_names) < int(mode) and m and G % m == 0:
                q = with_micro_batches(first, m)
                if q is not None:
                    plan_file(f"mb{m}", q)
                    variant_names.append(f"mb{m}")
# Uniform: every slot split evenly over the types, each device the whole model; the slot
# nearest above the first choice's that the type count divides and that divides G.
k, L = len(types), max(s["layers"][1] for s in top["stages"])
slot = G // top["micro_batches"]
while slot % k or G % slot:
    slot += 1
plan_file("uniform", {"micro_batches": G // slot, "stages": [
    {"group": g, "stage": 0, "device_type": t, "layers": [0, L], "tp": 1, "dp": 1,
     "micro_batch": slot // k} for g, t in enumerate(types)]})
names = [f"alone-{t}" for t in types] + names + variant_names + ["uniform"]


def key(name):
    p = json.load(open(f"{out}/plan-{name}.json"))
    return json.dumps([p["micro_batches"], [[s["group"], s["stage"], s["device_type"],
                                             s["layers"], s["tp"], s["dp"], s["micro_batch"],
                                             s.get("recompute", 0)] for s in p["stages"]]])


seen, runs, same = {}, [], {}
for name in names:
    kk = key(name)
    if kk not in seen:
        seen[kk] = name
        runs.append(name)
    same[name] = seen[kk]
json.dump({"names": names, "same": same}, open(f"{out}/plans.json", "w"))
open(f"{out}/runs.txt", "w").write(" ".join(runs) + "\n")
print(f"accel_plans: {len(names)} plans, {len(runs)} distinct "
      f"({sum(n.startswith('cand') for n in names)} candidates)")
