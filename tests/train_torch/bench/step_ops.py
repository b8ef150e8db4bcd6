#!/usr/bin/env python3
"""A plan's step taken apart, operation by operation, on every rank: the plan runs under
mixcclrun with mixccl.train's pipeline recorded (each forward and backward operation's start,
wall time, thread CPU time and emulated sleep; how long isend and irecv take to post and the
waits; per step the start), then prints per rank and kind of operation the median CPU time
(what the profile prices, before the type's slowdown), the median pause between one
operation's end (its sleep included) and the next one's start (the sends and receives, and
waiting for the neighbour), the posts' times, and the step's median against the planner's
price of it (mixccl-plan-predict with PROFILE).

  step_ops.py BUILD OUT PLAN.json PROFILE.json [--steps 10] [--base 3] [--model M] [--cluster C]

Results: docs/training-results.md, "Where the planner's price of a stage goes wrong"."""
import argparse
import glob
import json
import os
import statistics as st
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))


def record_rank():
    """The rank's program (under mixcclrun): mixccl.train with its pipeline recorded."""
    import atexit
    import torch.distributed as dist
    from mixccl.train import cli, pipeline, runner
    rec, posts, kind = [], {}, ["B"]
    forward = pipeline.StageRunner._forward_compute

    def forward_compute(self, *a, **k):
        kind[0] = "F"
        return forward(self, *a, **k)
    pipeline.StageRunner._forward_compute = forward_compute
    add = pipeline.StageTimes.add_compute

    def add_compute(self, idler, op):
        cpu, wall, before = idler.compute_seconds(op), time.perf_counter() - op[0], self.emulated_s
        add(self, idler, op)
        rec.append((kind[0], op[0], wall, cpu, self.emulated_s - before))
        kind[0] = "B"
    pipeline.StageTimes.add_compute = add_compute
    train_step = runner.Trainer.train_step

    def step(self):
        rec.append(("S", time.perf_counter(), 0.0, 0.0, 0.0))
        train_step(self)
    runner.Trainer.train_step = step

    def timed(name, f):
        def g(*a, **k):
            t0 = time.perf_counter()
            try:
                return f(*a, **k)
            finally:
                posts.setdefault(name, []).append(time.perf_counter() - t0)
        return g
    pipeline.dist.isend = timed("isend", dist.isend)
    pipeline.dist.irecv = timed("irecv", dist.irecv)
    pipeline.wait_for = timed("wait", pipeline.wait_for)
    rank = runner.job_rank_and_size()[0]
    atexit.register(lambda: json.dump({"ops": rec, "posts": posts},
                                      open(f"{os.environ['STEP_OPS_OUT']}-rank{rank}.json", "w")))
    sys.exit(cli.main(sys.argv[2:]))


def summarize(out, plan, predict):
    rep = json.load(open(f"{out}/report.json"))
    steps = [s["step_s"] * 1e3 for s in rep["steps"][1:]]
    print(f"step: median {st.median(steps):.1f} ms, fastest {min(steps):.1f}; "
          f"priced {predict['step_time_s'] * 1e3:.1f}")
    for f in sorted(glob.glob(f"{out}/ops-rank*.json")):
        r = int(f.split("rank")[-1].split(".")[0])
        d = json.load(open(f))
        ops, n, prev, gaps, cpu = [], 0, None, {}, {"F": [], "B": []}
        for x in d["ops"]:
            if x[0] == "S":
                n += 1
                continue
            if n > 1:  # step 1 left out
                cpu[x[0]].append(x[3] * 1e3)
                if prev is not None:
                    gaps.setdefault(prev[0] + x[0], []).append((x[1] - sum(prev[1:3]) - prev[4]) * 1e3)
            prev = x
        ro = rep["ranks"][r]
        pr = predict["stages"][r]
        per = {k: st.median(v) for k, v in cpu.items() if v}
        m = plan["micro_batches"]
        print(f"rank {r} {ro['device_type']} layers {ro['layers']} micro-batch {ro['micro_batch']} "
              f"(slowdown {ro['slowdown']:g}): CPU per operation F {per.get('F', 0):.3f} "
              f"B {per.get('B', 0):.3f} ms -> x slowdown x {m}: "
              f"{ro['slowdown'] * m * sum(per.values()):.1f} ms a step, priced busy "
              f"{pr['busy_s'] * 1e3:.1f} (sends included) + wait {pr['wait_s'] * 1e3:.1f}")
        print("   pause before the next operation (median, 10th percentile ms): " + ", ".join(
            f"{k} {st.median(v):.3f} {sorted(v)[len(v) // 10]:.3f}" for k, v in sorted(gaps.items())))
        if d["posts"]:
            print("   posts (median ms): " + ", ".join(
                f"{k} {st.median(v) * 1e3:.3f}" for k, v in sorted(d["posts"].items())))


def main():
    if sys.argv[1:2] == ["--record-rank"]:
        return record_rank()
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("build")
    ap.add_argument("out")
    ap.add_argument("plan")
    ap.add_argument("profile")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--base", type=float, default=3.0)
    ap.add_argument("--model", default=os.path.join(HERE, "accel-model.json"))
    ap.add_argument("--cluster", default=os.path.join(ROOT, "train/examples/emulated/cpu-fast-slow.json"))
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    for f in glob.glob(f"{a.out}/ops-rank*.json"):
        os.unlink(f)
    build = os.path.abspath(a.build)
    env = dict(os.environ, PYTHONPATH=f"{build}/python", OMP_NUM_THREADS="1",
               TORCH_CPP_LOG_LEVEL="ERROR", STEP_OPS_OUT=f"{a.out}/ops")
    plan = json.load(open(a.plan))
    predict = json.loads(subprocess.run(
        [f"{build}/train/mixccl-plan-predict", "--model", a.model, "--cluster", a.cluster,
         "--profile", a.profile, "--plan", a.plan], check=True, capture_output=True,
        text=True).stdout)
    ranks = sum(s["tp"] * s["dp"] for s in plan["stages"])
    subprocess.run([f"{build}/tools/mixcclrun", "-np", str(ranks), "--timeout", "300",
                    sys.executable, os.path.abspath(__file__), "--record-rank", "--model-spec",
                    a.model, "--plan", a.plan, "--cluster", a.cluster, "--slowdown-base",
                    str(a.base), "--threads", "1", "--steps", str(a.steps), "--quiet",
                    "--report", f"{a.out}/report.json"], check=True, env=env)
    summarize(a.out, plan, predict)


if __name__ == "__main__":
    main()
