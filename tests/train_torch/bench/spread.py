#!/usr/bin/env python3
"""How much the same plan's runs differ from one another, and why: every plan given runs REPS
times under mixcclrun, interleaved round by round, as accel.sh runs them; right before each
run a probe times a fixed piece of the model's own work (one forward and backward of the
accel model's whole stack at 8 sequences, one torch thread, the thread's CPU time) on each
core, so that a run's step time can be set beside the machine's speed at that moment.

  spread.py BUILD OUT PLAN.json[@OPTIONS] [...] [--reps 10] [--steps 7] [--base 3]
            [--model M] [--cluster C]

  spread.py --summary OUT/spread.json [STEPS]     (the tables again from a finished run)

OPTIONS: more mixccl.train options for that entry's runs, separated by commas
(cand1.json@--slowdown-base=2); the same plan can be given with and without them.

Prints per plan the runs' step times (the report's mean over steps 2..S, and the median),
their spread (largest / smallest - 1, and the median of |run - median run| / median run),
the probe's spread over the same moments, the spread of the step times divided by the probe
(what is left once the machine's speed is taken out), how far apart two measurements of the
plan from disjoint halves of the runs come out (by each run's mean step, and by the 10th
percentile of the steps, accel_tables.py's STEP=low), and the share of each rank's step in
compute (wall, with the sleep that emulates its speed), communication and the rest.
Run it on a quiet machine (/work/bin/measure)."""
import argparse
import json
import os
import statistics as st
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))

PROBE = r"""
import os, statistics, sys, torch
torch.set_num_threads(1)
from mixccl.train.spec import load_model_spec
from mixccl.train.model import build_llama_parts
from mixccl.train import profiler
from mixccl.train.emulation import SlowdownIdler
spec = load_model_spec(sys.argv[1])
parts = build_llama_parts(spec, 0, spec.num_layers, True, True, 1)
clock = SlowdownIdler(1.0, True)  # the thread's CPU time, no idle
for core in (0, 1):
    os.sched_setaffinity(0, {core})
    ts = []
    for i in range(10):
        r = profiler._measure_once(parts, spec, 8, torch.device("cpu"), False, clock)
        if i >= 2:
            ts.append(r["full_f"] + r["full_b"])
    print(statistics.median(ts) * 1e3)
"""


def probe(model):
    """The probe's milliseconds on core 0 and core 1 (mixcclrun puts rank r on core r)."""
    out = subprocess.run([sys.executable, "-c", PROBE, model],
                         check=True, capture_output=True, text=True).stdout
    return [float(x) for x in out.split()[-2:]]


def spread(xs):
    m = st.median(xs)
    return max(xs) / min(xs) - 1.0, st.median(abs(x - m) / m for x in xs)


def main():
    ap = argparse.ArgumentParser()
    if sys.argv[1:2] == ["--summary"]:  # spread.py --summary OUT/spread.json [STEPS]
        summarize(json.load(open(sys.argv[2])), int(sys.argv[3]) if len(sys.argv) > 3 else 7)
        return
    ap.add_argument("build")
    ap.add_argument("out")
    ap.add_argument("plans", nargs="+")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--steps", type=int, default=7)
    ap.add_argument("--base", type=float, default=3.0)
    ap.add_argument("--model", default=os.path.join(HERE, "accel-model.json"))
    ap.add_argument("--cluster", default=os.path.join(ROOT, "train/examples/emulated/cpu-fast-slow.json"))
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    os.makedirs(a.out, exist_ok=True)
    env = dict(os.environ, PYTHONPATH=os.path.join(build, "python"), OMP_NUM_THREADS="1",
               TORCH_CPP_LOG_LEVEL="ERROR")
    os.environ.update(env)
    entries = [(e.split("@", 1) + [""])[:2] for e in a.plans]
    names = [os.path.splitext(os.path.basename(p))[0] + (f"@{o}" if o else "") for p, o in entries]
    rows = {n: [] for n in names}
    for rep in range(a.reps):
        for name, (plan, opts) in zip(names, entries):
            p = probe(a.model)
            ranks = sum(s["tp"] * s["dp"] for s in json.load(open(plan))["stages"])
            report = os.path.join(a.out, f"report-{name.replace('@', '-').replace('=', '-')}-{rep}.json")
            subprocess.run([os.path.join(build, "tools/mixcclrun"), "-np", str(ranks),
                            "--timeout", "300", sys.executable, "-m", "mixccl.train",
                            "--model-spec", a.model, "--plan", plan, "--cluster", a.cluster,
                            "--slowdown-base", str(a.base), "--threads", "1",
                            "--steps", str(a.steps), "--quiet", "--report", report]
                           + [o for o in opts.split(",") if o], check=True, env=env)
            r = json.load(open(report))
            steps = r["steps"][1:]
            rows[name].append({"probe": p, "mean": r["summary"]["mean_step_time_s"],
                               "median": st.median(s["step_s"] for s in steps),
                               "steps": [s["step_s"] for s in steps],
                               "ranks": [[(x["emulated_s"], x["compute_s"], x["comm_s"],
                                           x["idle_s"]) for x in s["ranks"]] for s in steps]})
    json.dump(rows, open(os.path.join(a.out, "spread.json"), "w"))
    summarize(rows, a.steps)


def low(xs):
    """The 10th percentile (train/bench/accel_tables.py's STEP=low)."""
    xs = sorted(xs)
    at = 0.1 * (len(xs) - 1)
    i = int(at)
    return xs[i] + (xs[min(i + 1, len(xs) - 1)] - xs[i]) * (at - i)


def summarize(rows, steps):
    for name in rows:
        rs = rows[name]
        mean = [r["mean"] * 1e3 for r in rs]
        med = [r["median"] * 1e3 for r in rs]
        pr = [st.mean(r["probe"]) for r in rs]
        within = [max(r["steps"]) / min(r["steps"]) - 1 for r in rs]
        print(f"{name}: {len(rs)} runs of {steps} steps")
        print(f"  step mean   ms: {' '.join(f'{x:.1f}' for x in mean)}")
        print(f"  probe       ms: {' '.join(f'{x:.2f}' for x in pr)} (cores 0/1 averaged)")
        for label, xs in (("run mean step", mean), ("run median step", med), ("probe", pr),
                          ("mean step / probe", [m / q for m, q in zip(mean, pr)])):
            s = spread(xs)
            print(f"  spread of {label:18s}: largest/smallest-1 {s[0]*100:5.1f}%,"
                  f" median |x-median|/median {s[1]*100:4.1f}%")
        print(f"  steps within a run, largest/smallest-1: median {st.median(within)*100:.1f}%")
        corr = st.correlation(mean, pr) if len(rs) > 2 else float('nan')
        print(f"  correlation of run step and probe: {corr:.2f}")
        nr = len(rs[0]["ranks"][0])
        for k in range(nr):
            parts = [[s[k][j] for r in rs for s in r["ranks"]] for j in range(4)]
            print(f"  rank {k} per step, median ms: compute {st.median(parts[1])*1e3:.1f}"
                  f" (of it slept {st.median(parts[0])*1e3:.1f}) comm {st.median(parts[2])*1e3:.1f}"
                  f" idle {st.median(parts[3])*1e3:.1f}")

        # Two measurements of the plan from disjoint runs (the even and the odd rounds), each
        # as accel_tables.py would take it: how far apart they come out.
        halves = (rs[0::2], rs[1::2])
        for label, f in (("mean of the runs' mean steps", lambda h: st.mean(r["mean"] for r in h)),
                         ("median of the runs' mean steps", lambda h: st.median(r["mean"] for r in h)),
                         ("10th percentile of all steps", lambda h: low([x for r in h for x in r["steps"]]))):
            x, y = f(halves[0]), f(halves[1])
            print(f"  even against odd runs, {label:31s}: {x*1e3:6.1f} / {y*1e3:6.1f} ms,"
                  f" {abs(x - y) / min(x, y) * 100:4.1f}% apart")


if __name__ == "__main__":
    main()
