"""A plan as mixccl.train executes it: mixccl-plan's --json output (or a hand-written file of
the same shape, docs/training.md), its rank map and each rank's role. This mirrors
train/src/exec_plan.cc and rank_map.cc field by field; `mixccl-plan --layout PLAN.json`
prints the C++ side's result and test_layout_equals_cpp compares the two."""
import json
from dataclasses import dataclass, field

from .spec import InputError, load_json


@dataclass
class Stage:
    device_type: str
    first_layer: int
    last_layer: int
    tp: int
    recompute: int
    classes: list  # [(replicas, micro_batch)], larger micro-batch first, as the planner writes


@dataclass
class Plan:
    origin: str
    micro_batches: int
    global_batch: int = 0  # 0: not given
    seq_length: int = 0
    groups: list = field(default_factory=list)  # per group, its list of Stage
    blocks: list = field(default_factory=list)  # per group, [(type, tp, stages)] device-type blocks

    def dp(self, g):
        return sum(r for r, _ in self.groups[g][0].classes)

    def group_ranks(self, g):
        return sum(tp * n * self.dp(g) for _, tp, n in self.blocks[g])

    @property
    def num_ranks(self):
        return sum(self.group_ranks(g) for g in range(len(self.groups)))

    @property
    def num_replicas(self):
        return sum(self.dp(g) for g in range(len(self.groups)))


def _int(obj, name, where, origin, lo, required=True, default=0):
    if name not in obj:
        if required:
            raise InputError(f'{origin}: {where}has no "{name}"')
        return default
    v = obj[name]
    if not isinstance(v, int) or isinstance(v, bool) or v < lo:
        raise InputError(f'{origin}: {where}"{name}" must be an integer >= {lo}')
    return v


def _where(g, s):
    return f"group {g} stage {s}: "


def parse_plan(obj, origin):
    if not isinstance(obj, dict):
        raise InputError(f"{origin}: a plan is a JSON object")
    if "error" in obj:
        raise InputError(f"{origin}: the planner found no plan: {json.dumps(obj['error'])}")
    plan = Plan(origin=origin, micro_batches=_int(obj, "micro_batches", "", origin, 1),
                global_batch=_int(obj, "global_batch_size", "", origin, 1, False),
                seq_length=_int(obj, "seq_length", "", origin, 1, False))
    entries = obj.get("stages")
    if not isinstance(entries, list) or not entries:
        raise InputError(f'{origin}: "stages" must be a non-empty array')
    by_key = {}
    for e in entries:
        if not isinstance(e, dict):
            raise InputError(f"{origin}: a stage entry is a JSON object")
        key = (_int(e, "group", "a stage entry ", origin, 0), _int(e, "stage", "a stage entry ", origin, 0))
        by_key.setdefault(key, []).append(e)
    num_groups = max(g for g, _ in by_key) + 1
    plan.groups = [[] for _ in range(num_groups)]
    for (g, s) in sorted(by_key):
        if len(plan.groups[g]) != s:
            raise InputError(f"{origin}: {_where(g, len(plan.groups[g]))}missing")
        where = _where(g, s)
        e = by_key[(g, s)][0]
        layers = e.get("layers")
        if (not isinstance(layers, list) or len(layers) != 2
                or not all(isinstance(x, int) and not isinstance(x, bool) for x in layers)):
            raise InputError(f'{origin}: {where}"layers" must be [first, last_exclusive]')
        recompute = _int(e, "recompute", where, origin, 0, False, 0)
        if recompute > layers[1] - layers[0]:
            raise InputError(f"{origin}: {where}recomputes {recompute} layers of "
                             f"{layers[1] - layers[0]}")
        classes = [(_int(c, "dp", where, origin, 1), _int(c, "micro_batch", where, origin, 1))
                   for c in by_key[(g, s)]]
        if s > 0 and classes != plan.groups[g][0].classes:
            raise InputError(f"{origin}: {where}its replicas' micro-batches differ from stage 0's")
        device_type = e.get("device_type", "cpu")
        if not isinstance(device_type, str):
            raise InputError(f'{origin}: {where}"device_type" must be a string')
        plan.groups[g].append(Stage(device_type, layers[0], layers[1],
                                    _int(e, "tp", where, origin, 1), recompute, classes))
    for g, stages in enumerate(plan.groups):
        if not stages:
            raise InputError(f"{origin}: group {g} has no stages")
        blocks = []
        for st in stages:  # consecutive stages of one device type and tp form a block
            if blocks and blocks[-1][0] == st.device_type and blocks[-1][1] == st.tp:
                blocks[-1][2] += 1
            else:
                blocks.append([st.device_type, st.tp, 1])
        plan.blocks.append([tuple(b) for b in blocks])
    first_replica = {}
    for e in entries:  # listed ranks must be the rank map's
        g, s = e["group"], e["stage"]
        first = first_replica.get((g, s), 0)
        if "ranks" in e:
            expected = [rank_of(plan, g, r, s, t) for r in range(first, first + e["dp"])
                        for t in range(e["tp"])]
            if e["ranks"] != expected:
                raise InputError(f'{origin}: {_where(g, s)}"ranks" {json.dumps(e["ranks"])} '
                                 f"are not the rank map's {json.dumps(expected)}")
        first_replica[(g, s)] = first + e["dp"]
    return plan


def load_plan(path):
    return parse_plan(load_json(path, "plan"), path)


def _block_of_stage(plan, g, stage):
    first = 0
    for b, (_, _, n) in enumerate(plan.blocks[g]):
        if stage < first + n:
            return b, stage - first
        first += n
    raise ValueError(f"no stage {stage} in group {g}")


def _block_start(plan, g, b):
    start = sum(plan.group_ranks(i) for i in range(g))
    return start + sum(tp * n * plan.dp(g) for _, tp, n in plan.blocks[g][:b])


def rank_of(plan, group, replica, stage, tp_index=0):
    """train/src/rank_map.cc's RankOf: block_start + (replica * stages + local_stage) * tp + tp_index."""
    b, local = _block_of_stage(plan, group, stage)
    _, tp, n = plan.blocks[group][b]
    return _block_start(plan, group, b) + (replica * n + local) * tp + tp_index


def place_rank(plan, rank):
    """The inverse: (group, replica within the group, stage, tp index) of `rank`."""
    start = 0
    for g in range(len(plan.groups)):
        first_stage = 0
        for _, tp, n in plan.blocks[g]:
            size = n * tp * plan.dp(g)
            if start <= rank < start + size:
                local = rank - start
                return g, local // (tp * n), first_stage + (local // tp) % n, local % tp
            start += size
            first_stage += n
    raise InputError(f"rank {rank} is not among the plan's {plan.num_ranks} ranks")


@dataclass
class Role:
    rank: int
    group: int
    replica: int  # within the group
    replica_number: int  # over all groups: the replica's place in each micro-batch slot
    stage: int
    num_stages: int
    tp_index: int
    first_layer: int
    last_layer: int
    micro_batch: int
    slot_offset: int  # sequences of the replicas numbered before it, in each slot
    recompute: int
    device_type: str

    @property
    def has_embedding(self):
        return self.stage == 0

    @property
    def has_head(self):
        return self.stage == self.num_stages - 1


def role_of_rank(plan, rank):
    """train/src/exec_plan.cc's RoleOfRank."""
    g, replica, stage, tp_index = place_rank(plan, rank)
    before = offset = 0
    for gg in range(g):
        for n, mb in plan.groups[gg][0].classes:
            before += n
            offset += n * mb
    r, micro_batch = replica, 0
    for n, mb in plan.groups[g][0].classes:
        if r < n:
            micro_batch = mb
            offset += r * mb
            break
        r -= n
        offset += n * mb
    st = plan.groups[g][stage]
    return Role(rank, g, replica, before + replica, stage, len(plan.groups[g]), tp_index,
                st.first_layer, st.last_layer, micro_batch, offset, st.recompute, st.device_type)


def gradient_cuts(plan, num_layers):
    """Layers where some group's pipeline has a stage boundary, 0 and L included: between two
    cuts every replica holds the layers on exactly one rank."""
    cuts = {0, num_layers}
    for stages in plan.groups:
        cuts.update(st.first_layer for st in stages)
    return sorted(cuts)


def one_f_one_b_order(stage, num_stages, micro_batches):
    """train/src/schedule_1f1b.cc's OneFOneBOrder, as [(forward, micro_batch)]: stage j runs
    min(P-1-j, m) warm-up forwards, then alternates one forward and one backward, then drains."""
    m = micro_batches
    warmup = min(num_stages - 1 - stage, m)
    ops = [(True, i) for i in range(warmup)]
    for i in range(m - warmup):
        ops += [(True, warmup + i), (False, i)]
    ops += [(False, i) for i in range(m - warmup, m)]
    return ops


def layout(plan):
    """The same JSON object as `mixccl-plan --layout` prints."""
    num_layers = max(stages[-1].last_layer for stages in plan.groups)
    ranks = []
    for rank in range(plan.num_ranks):
        ro = role_of_rank(plan, rank)
        order = [("F" if f else "B") + str(i)
                 for f, i in one_f_one_b_order(ro.stage, ro.num_stages, plan.micro_batches)]
        ranks.append({"rank": rank, "group": ro.group, "replica": ro.replica,
                      "replica_number": ro.replica_number, "stage": ro.stage,
                      "num_stages": ro.num_stages, "tp_index": ro.tp_index,
                      "layers": [ro.first_layer, ro.last_layer], "micro_batch": ro.micro_batch,
                      "slot_offset": ro.slot_offset, "recompute": ro.recompute, "order": order})
    return {"num_ranks": plan.num_ranks, "micro_batches": plan.micro_batches,
            "gradient_cuts": gradient_cuts(plan, num_layers), "ranks": ranks}
