"""`--allow-grow`: a replacement rank started later (`--join DIR`, grow_join.py) joins the job
at a step boundary and the plan expands again (docs/reliability.md, "A replacement joins").

After every step rank 0 looks in the job's store for a waiting joiner and broadcasts what it
found, so every rank takes the joiner at the same step. Then every rank checks the joiner's
options against its own, the planner re-plans for the ranks plus the joiner (survive_plan.replan,
the global batch kept), and rank 0 answers the joiner. torch.distributed has no way to add a
rank to a process group (shrink_group and split_group only make smaller ones), so the ranks
give up the world (destroy_process_group: a healthy group, so nothing is lost) and form a new
one with the joiner, under a store prefix of its own; then every rank builds its stage of the
new plan, and the weights, AdamW moments and step go from the replicas to whoever needs them
(survive_state.take_state, the joiner holding nothing)."""
import dataclasses
import datetime
import json
import os
import time

import torch
import torch.distributed as dist

from .pipeline import PeerFailed, wait_for
from .plan import role_of_rank
from .spec import InputError
from .survive_members import announce
from .survive_plan import replan
from .survive_state import held_state, take_state
from .grow_store import PREFIX, base_store, store_address, write_job_file

# The options that change the training's numbers or its collectives: a joiner must run the
# job's values.
SETTINGS = ("steps", "seed", "lr", "weight_decay", "grad_clip", "data", "model_module",
            "checkpoint", "checkpoint_every", "slowdown_base")


def check_options(args):
    if args.allow_grow and not args.survive:
        raise InputError("--allow-grow needs --survive DIR: a replacement joins with --join DIR")
    if args.allow_grow and not args.join and not ("MIXCCL_COMM_ID" in os.environ
                                                  or "MASTER_ADDR" in os.environ):
        raise InputError("--allow-grow: a replacement reaches the job through its store: run "
                         "the job under mixcclrun (a file store) or an env:// rendezvous "
                         "(MASTER_ADDR, MASTER_PORT)")


def settings(args, spec):
    return dict({k: getattr(args, k) for k in SETTINGS}, model=dataclasses.asdict(spec))


def announce_job(trainer):
    """Rank 0: DIR/job.json, which a joiner reads (grow_store.py)."""
    if trainer.rank == 0:
        write_job_file(trainer.args.survive, {
            "store": store_address(trainer.store_file), "allow_grow": trainer.args.allow_grow,
            "state": "running"})


def job_finished(trainer):
    """Rank 0 at the end: a joiner still waiting gives up at once."""
    if trainer.rank == 0:
        write_job_file(trainer.args.survive, {"store": None, "allow_grow": False,
                                              "state": "finished"})


def grown_order(types, joiner_type):
    """(device types of the grown job, new rank of each old rank, the joiner's rank): the joiner
    goes after the last rank of its type (at the end when it is the only one), so the ranks keep
    their order, a type's ranks stay together as the planner numbers them, and rank 0 stays 0."""
    at = max((i + 1 for i, t in enumerate(types) if t == joiner_type), default=len(types))
    new_types = types[:at] + [joiner_type] + types[at:]
    return new_types, [r if r < at else r + 1 for r in range(len(types))], at


def form_group(epoch, rank, world, timeout_s, store):
    """The grown world: every old rank and the joiner, under the store prefix of join `epoch`."""
    import mixccl.torch  # noqa: F401  registers the "mixccl" backend
    dist.init_process_group("mixccl", store=dist.PrefixStore(f"{PREFIX}-{epoch}", store),
                            rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=timeout_s))


def _problem(trainer, request):
    """Why the joiner cannot join, or None; every rank finds the same (the same inputs)."""
    a = trainer.args
    mine = settings(a, trainer.spec)
    differ = [f"--{k.replace('_', '-')} {request['settings'][k]!r} (the job's: {v!r})"
              for k, v in mine.items() if k != "model" and request["settings"].get(k) != v]
    if request["settings"].get("model") != mine["model"]:
        differ.append(f"a model spec that differs from the job's {a.model_spec}")
    if differ:
        return f"it runs {', '.join(differ)}: give it the job's options"
    from .devices import load_cluster
    cluster = load_cluster(a.cluster)
    if request["device_type"] not in cluster:
        return (f"its device type {request['device_type']} is not in the cluster spec "
                f"{a.cluster} (its types: {', '.join(sorted(cluster))})")
    return None


def _answer(store, ticket, text):
    """Rank 0: the joiner's answer, unless it withdrew first (compare_set decides who was
    first); returns whether the answer stands."""
    key = f"{PREFIX}/answer/{ticket}"
    return store.compare_set(key, "", text) == text.encode()


def _broadcast_flag(trainer, value, what):
    flag = torch.tensor([value], dtype=torch.int64)
    wait_for(dist.broadcast(flag, src=0, async_op=True), trainer.rank, what, 0)
    return int(flag[0])


def take_joiner(trainer):
    """At a step boundary: every rank learns from rank 0 whether a joiner waits; if so they take
    it (or all refuse it alike: rank 0 answers it with the reason)."""
    a = trainer.args
    if trainer.step >= a.steps:
        return
    store = base_store()
    ticket = getattr(trainer, "join_tickets", 0) + 1
    waiting = trainer.rank == 0 and store.check([f"{PREFIX}/request/{ticket}"])
    if not _broadcast_flag(trainer, int(waiting), "whether a rank joins, from rank"):
        return
    started = time.perf_counter()
    trainer.join_tickets = ticket
    request = [json.loads(store.get(f"{PREFIX}/request/{ticket}")) if trainer.rank == 0
               else None]
    dist.broadcast_object_list(request, src=0)
    request = request[0]
    epoch = getattr(trainer, "grows", 0) + 1
    out_dir = os.path.join(a.survive, f"grow-{epoch}")
    old_world = trainer.world
    types = [role_of_rank(trainer.plan, r).device_type for r in range(old_world)]
    new_types, new_ranks, joiner_rank = grown_order(types, request["device_type"])
    refusal = _problem(trainer, request)
    if refusal is None:
        try:
            plan, plan_path = replan(a, new_types, out_dir, trainer.rank)
        except PeerFailed as e:
            refusal = str(e)
    planned = time.perf_counter()
    who = f"the rank from {request['host']} pid {request['pid']} (device type {request['device_type']})"
    if refusal is not None:
        if trainer.rank == 0:
            _answer(store, ticket, json.dumps({"refused": refusal}))
            print(f"mixccl.train: refused {who} after step {trainer.step}: {refusal}", flush=True)
        return
    standing = trainer.rank == 0 and _answer(store, ticket, json.dumps({
        "epoch": epoch, "rank": joiner_rank, "world": old_world + 1, "plan": plan_path,
        "plan_json": plan_to_json(plan_path), "step": trainer.step, "grows": epoch,
        "join_tickets": ticket, "recoveries": getattr(trainer, "recoveries", 0)}))
    if not _broadcast_flag(trainer, int(standing), "whether the joiner is still there, from rank"):
        if trainer.rank == 0:
            print(f"mixccl.train: {who} gave up waiting before step {trainer.step + 1}; the "
                  f"{old_world} ranks go on", flush=True)
        return
    held = held_state(trainer.parts, trainer.optimizer)
    dist.destroy_process_group()
    form_group(epoch, new_ranks[trainer.rank], old_world + 1, a.timeout, store)
    trainer.rank, trainer.world = new_ranks[trainer.rank], old_world + 1
    grouped = time.perf_counter()
    trainer.plan, trainer.role = plan, role_of_rank(plan, trainer.rank)
    trainer.build_rank()
    finish_join(trainer, held, trainer.step, out_dir, epoch)
    done = time.perf_counter()
    rep = trainer.report
    rep.world, rep.plan, rep.plan_origin = trainer.world, plan, plan_path
    if trainer.rank == 0:
        print(f"mixccl.train: rank {joiner_rank} joined after step {trainer.step} ({who}): "
              f"{trainer.world} ranks go on with {plan_path} (micro-batches "
              f"{','.join(str(role_of_rank(plan, r).micro_batch) for r in range(trainer.world))})"
              f"; join {done - started:.2f} s (re-plan {planned - started:.2f}, new group "
              f"{grouped - planned:.2f}, state and groups {done - grouped:.2f})", flush=True)


def plan_to_json(path):
    with open(path) as f:
        return json.load(f)


def finish_join(trainer, held, my_step, out_dir, epoch):
    """Every rank of the grown world, its stage of the new plan built: the state from the
    replicas, DIR/grow-K/ (the plan's checkpoint of the state the job goes on from, resumable
    with --plan DIR/grow-K/plan.json --resume DIR/grow-K), and what a later loss needs."""
    a = trainer.args
    trainer.step = take_state(trainer, held, my_step)
    trainer.save_checkpoint(out_dir)
    dist.barrier()  # every rank's file is written before any goes on
    if a.checkpoint and a.checkpoint_every:
        # A later loss rolls back to files of the grown plan.
        trainer.save_checkpoint(a.checkpoint)
        dist.barrier()
    trainer.grows = epoch
    announce(trainer.rank)  # for survive_members.py: this rank's process under its new number
