#!/usr/bin/env python3
"""The tables of train/bench/accel_ratio.sh from its output folder.

  accel_tables.py OUT REPS
  env STEP=median: a run's step time is the median of its steps (step 1 left out) rather
  than its report's mean; a few steps slowed by something else on the machine then move it
  less.
  env STEP=low: a run's step time is the 10th percentile of its steps, and a plan's measured
  step the 10th percentile of its steps of all rounds together (rather than the median over
  the rounds): the machine's quiet speed, for predictions from a profile of the fastest
  repeats (mixccl.train's profiler) on a machine whose cores slow down in spells of seconds
  (docs/training-results.md, "Why the same plan's runs differ").

Prints (1) every plan's prediction against its measurement, (2) R for the planner's first
choice and for the uniform plan, (3) the search accuracy E over the planner's candidates and
E_mb over the first choice's micro-batch counts, and the load averages seen during the rounds.
"""
import json
import os
import statistics
import sys

out, reps = sys.argv[1], int(sys.argv[2])
info = json.load(open(f"{out}/plans.json"))
names, same = info["names"], info["same"]
rounds = range(1, reps + 1)
STEP = os.environ.get("STEP", "mean")
MEASURED_HEAD = ("measured step ms (10th percentile of all steps; rounds' range)" if STEP == "low"
                 else "measured step ms (median; min-max)")


def steps_of(run, r):
    """The run's step times, step 1 left out (mixccl-train's reports say step_time_s,
    mixccl.train's step_s)."""
    rep = json.load(open(f"{out}/report-{run}-{r}.json"))
    return [x.get("step_time_s", x.get("step_s")) for x in rep["steps"][1:]]


def low(xs):
    """The 10th percentile, interpolated between the two nearest steps."""
    xs = sorted(xs)
    at = 0.1 * (len(xs) - 1)
    i = int(at)
    return xs[i] + (xs[min(i + 1, len(xs) - 1)] - xs[i]) * (at - i)


def step_time(run, r):
    if STEP == "median":
        return statistics.median(steps_of(run, r))
    if STEP == "low":
        return low(steps_of(run, r))
    return json.load(open(f"{out}/report-{run}-{r}.json"))["summary"]["mean_step_time_s"]


def shape(plan):
    return "; ".join(
        f"g{s['group']}s{s['stage']} {s.get('device_type', '')} L{s['layers']} mb{s['micro_batch']}"
        + (f" rc{s['recompute']}" if s.get("recompute") else "") for s in plan["stages"])


rows = {}
for name in names:
    run = same[name]  # a plan identical to one listed before it ran once, under that name
    plan = json.load(open(f"{out}/plan-{name}.json"))
    times = [step_time(run, r) for r in rounds]
    predictions = [json.load(open(f"{out}/predict-{run}-{r}.json"))["step_time_s"] for r in rounds]
    measured = (low([t for r in rounds for t in steps_of(run, r)]) if STEP == "low"
                else statistics.median(times))
    predicted = statistics.median(predictions)
    # How far the slowest-emulating rank fell behind its emulated device (ms per step): the
    # machine did not give it its share of the CPU (docs/training.md, "Emulated device speeds").
    behind = []
    for r in rounds:
        rep = json.load(open(f"{out}/report-{run}-{r}.json"))
        behind.append(max(x.get("emulation_behind_s", float("nan")) for x in rep["ranks"])
                      / len(rep["steps"]))
    rows[name] = dict(behind=statistics.median(behind),
        plan=plan, measured=measured, predicted=predicted, spread=(min(times), max(times)),
        tps=plan["global_batch_size"] * plan["seq_length"] / measured,
        err=predicted / measured - 1,
        round_err=statistics.median(p / t - 1 for p, t in zip(predictions, times)),
        planner=plan.get("predicted", {}).get("step_time_s"), run=run)


def label(name):
    return name if same[name] == name else f"{name} (= {same[name]})"


def search_accuracy(times):
    """E = 1 - |T_auto - T_best| / T_best over {plan name: step time}; T_auto is cand1's.
    Returns E and the best plan's name."""
    best = min(times, key=times.get)
    return 1 - abs(times["cand1"] - times[best]) / times[best], best


def measured_cell(r):
    """The measured step (STEP=low: of all rounds' steps; else the median over the rounds)
    and the range of the rounds' own, ms."""
    return f"{r['measured']*1e3:.1f} ({r['spread'][0]*1e3:.1f}-{r['spread'][1]*1e3:.1f})"


def md_table(head, cells):
    """A markdown table: the column names, then one list of cell strings per row."""
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for c in cells:
        print("| " + " | ".join(c) + " |")


md_table(["plan", "micro-batches", "stages", "predicted step ms",
          MEASURED_HEAD, "error", "error per round (median)", "tokens/s",
          "emulation behind, ms/step"],
         [[name, str(r["plan"]["micro_batches"]), shape(r["plan"]), f"{r['predicted']*1e3:.1f}",
           measured_cell(r), f"{r['err']*100:+.1f}%", f"{r['round_err']*100:+.1f}%",
           f"{r['tps']:.0f}", f"{r['behind']*1e3:.1f}"]
          for name, r in rows.items() if same[name] == name])

alone = [n for n in names if n.startswith("alone-")]
total = sum(rows[n]["tps"] for n in alone)
parts = " + ".join(f"{rows[n]['tps']:.0f}" for n in alone)
print()
print(f"R (planned, cand1) = {rows['cand1']['tps']:.0f} / ({parts}) = {rows['cand1']['tps']/total:.3f}")
print(f"R (uniform)        = {rows['uniform']['tps']:.0f} / {total:.0f} = {rows['uniform']['tps']/total:.3f}")
pred_total = sum(rows[n]["plan"]["global_batch_size"] * rows[n]["plan"]["seq_length"] / rows[n]["predicted"]
                 for n in alone)
c1 = rows["cand1"]
print(f"R predicted (same rounds' predictions) = "
      f"{c1['plan']['global_batch_size'] * c1['plan']['seq_length'] / c1['predicted'] / pred_total:.3f}")

cands = [n for n in names if n.startswith("cand")]
print()
md_table(["candidate", "layout", "micro-batches", "planner's step ms",
          "predicted step ms (rounds)", MEASURED_HEAD, "error"],
         [[label(n), str(rows[n]["plan"].get("layout", "")), str(rows[n]["plan"]["micro_batches"]),
           # a candidate at a micro-batch count the planner did not report has no figure
           f"{rows[n]['planner']*1e3:.1f}" if rows[n]["planner"] else "-",
           f"{rows[n]['predicted']*1e3:.1f}",
           measured_cell(rows[n]), f"{rows[n]['err']*100:+.1f}%"] for n in cands])
t_auto = rows["cand1"]["measured"]
e, best = search_accuracy({n: rows[n]["measured"] for n in cands})
t_best = rows[best]["measured"]
print()
print(f"E = 1 - |T_auto - T_best| / T_best = 1 - |{t_auto*1e3:.1f} - {t_best*1e3:.1f}| / "
      f"{t_best*1e3:.1f} = {e:.3f}  (best measured: {best})")
# E per round: the same over each round's own measurements.
per_round = []
for r in rounds:
    per_round.append(search_accuracy(
        {n: step_time(same[n], r) for n in cands})[0])
print("E per round: " + ", ".join(f"{e:.3f}" for e in per_round))

# E over micro-batch counts: the first choice against its own layout with other micro-batch
# counts (accel_ratio.sh's mb<count> plans), all measured.
variants = [n for n in names if n.startswith("mb")]
if variants:
    group = ["cand1"] + variants
    print()
    md_table(["plan", "micro-batches", "micro-batch per stage", "predicted step ms (rounds)",
              MEASURED_HEAD, "error"],
             [[label(n), str(rows[n]["plan"]["micro_batches"]),
               ", ".join(str(s["micro_batch"]) for s in rows[n]["plan"]["stages"]),
               f"{rows[n]['predicted']*1e3:.1f}", measured_cell(rows[n]),
               f"{rows[n]['err']*100:+.1f}%"] for n in group])
    e_mb, best_mb = search_accuracy({n: rows[n]["measured"] for n in group})
    print()
    print(f"E_mb = 1 - |T_auto - T_best| / T_best over cand1's micro-batch counts = "
          f"{e_mb:.3f}  (best measured: {best_mb}; predicted best: "
          f"{min(group, key=lambda n: rows[n]['predicted'])})")

# Where each rank's step goes, measured (the reports' steps[].ranks, steps 2.., mean over the
# steps, median over the rounds) against the prediction (mixccl-plan-predict's stages: busy =
# compute and sends, wait, AllReduce, update). Measured "comm" holds the sends, the waits and
# the AllReduce; "other" is the rest of the step (the update, reading data). Plans whose every
# entry is one rank (tp 1, dp 1), whose rank is then the entry's index (the rank map).
print()
per_rank_cells = []
for name in names:
    if same[name] != name:
        continue
    plan = rows[name]["plan"]
    if any(s["tp"] * s["dp"] != 1 for s in plan["stages"]):
        continue
    per_rank = {}
    for r in rounds:
        rep = json.load(open(f"{out}/report-{name}-{r}.json"))
        pred = json.load(open(f"{out}/predict-{name}-{r}.json"))
        steps = rep["steps"][1:] or rep["steps"]
        for k, st in enumerate(pred.get("stages", [])):
            m = [statistics.mean(x["ranks"][k][f] for x in steps)
                 for f in ("compute_s", "comm_s", "idle_s")]
            p = [st["busy_s"], st["wait_s"] + st["allreduce_s"], st["update_s"]]
            per_rank.setdefault(k, []).append((m, p))
    for k, v in per_rank.items():
        s = plan["stages"][k]
        med = lambda i, j: statistics.median(x[i][j] for x in v) * 1e3
        per_rank_cells.append([name, str(k), s.get("device_type", ""), str(s["micro_batch"]),
                               str(s["layers"]),
                               f"{med(0, 0):.1f} / {med(0, 1):.1f} / {med(0, 2):.1f}",
                               f"{med(1, 0):.1f} / {med(1, 1):.1f} / {med(1, 2):.1f}"])
md_table(["plan", "rank", "device", "micro-batch", "layers",
          "measured compute / comm / other ms", "predicted busy / wait + AllReduce / update ms"],
         per_rank_cells)

# Stalls: steps lasting over 1.5 times their run's median step (an emulated device that the
# machine held up for a moment; it pays the time back in its later idles, which a synchronised
# step cannot use when another rank is then the slowest), over all rounds.
print()
stalls = []
for name in names:
    if same[name] != name:
        continue
    n = total = 0
    for r in rounds:
        # mixccl-train's reports say step_time_s, mixccl.train's step_s.
        t = [x.get("step_time_s", x.get("step_s"))
             for x in json.load(open(f"{out}/report-{name}-{r}.json"))["steps"][1:]]
        med = statistics.median(t)
        n += sum(x > 1.5 * med for x in t)
        total += len(t)
    stalls.append(f"{name} {n}/{total}")
print("steps over 1.5 x their run's median: " + ", ".join(stalls))

errs = [rows[n]["err"] for n in names if same[n] == n]
print()
print(f"prediction errors over the {len(errs)} distinct plans: "
      f"{min(errs)*100:+.1f}% .. {max(errs)*100:+.1f}%, largest |error| {max(abs(e) for e in errs)*100:.1f}%")
abs_errs = sorted(abs(e) for e in errs)
print(f"|error| median {statistics.median(abs_errs)*100:.1f}%, 90th percentile "
      f"{abs_errs[int(0.9 * (len(abs_errs) - 1))]*100:.1f}%; within 5%: "
      f"{sum(e <= 0.05 for e in abs_errs)} of {len(abs_errs)}, within 10%: "
      f"{sum(e <= 0.10 for e in abs_errs)}")
# The same plan's rounds apart: a round's step time (STEP's statistic) against its other
# rounds', largest / smallest - 1, over the distinct plans.
apart = sorted(r["spread"][1] / r["spread"][0] - 1 for n, r in rows.items() if same[n] == n)
print(f"the same plan's rounds apart (largest / smallest - 1, STEP={STEP}): median "
      f"{statistics.median(apart)*100:.1f}%, largest {apart[-1]*100:.1f}%")
loads = [line.split() for line in open(f"{out}/load.txt")]
one_min = [float(l[-3]) for l in loads]
print(f"load average (1 min) at the rounds' starts and the end: "
      f"{min(one_min):.2f}-{max(one_min):.2f} ({', '.join(f'{x:.2f}' for x in one_min)})")
