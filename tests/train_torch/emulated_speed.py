"""Emulated device speeds (--cluster, --slowdown-base) take effect in runs and in the profile.

  emulated_speed.py SPEC PLAN CLUSTER MIXCCLRUN

CLUSTER has a `fast` type and a `slow` one 32 times slower. The plan (a replica on each, the
same micro-batches) runs 4 steps with --slowdown-base 1.5: the report must give the ranks
slowdowns 1.5 and 48, the slow rank must have slept for most of its compute, and its compute
must be well above the fast one's: 32 times as long in an exact emulation, at least 2
asserted. The slow rank's emulated time is a multiple of its CPU time, the fast rank's
compute is its wall time, which other processes stretch (10 times seen under `ctest -j2`
beside other tests), so the bound is generous on purpose; no absolute time is checked. The
profiler, in this process, must measure the slow type's block well above the fast type's (at
least 2 times; 32 exactly). The options that do not fit
are refused with their messages."""
import contextlib
import io
import json
import os
import shutil
import statistics
import sys

import harness

KEPT_STEPS = slice(1, None)  # the first step forms the communicators


def refusals(spec, plan, cluster):
    from mixccl.train.cli import main as train_main
    cases = [
        (["--slowdown-base", "0.5", "--cluster", cluster],
         "mixccl.train: --slowdown-base wants a number >= 1, got 0.5"),
        (["--slowdown-base", "2"],
         "mixccl.train: --slowdown-base scales the speeds of --cluster CLUSTER.json; give both"),
        (["--device-type", "slow"],
         "mixccl.train: --device-type names a type of --cluster CLUSTER.json; give both"),
        (["--device-type", "slow", "--cluster", cluster, "--plan", plan],
         "mixccl.train: with --plan each rank's device type comes from the plan: leave out "
         "--device-type"),
        (["--cluster", cluster],
         "mixccl.train: --cluster emulates device speeds: a single process needs --device-type NAME"),
        (["--cluster", cluster, "--device-type", "tpu"],
         f"mixccl.train: cluster spec {cluster}: no device type \"tpu\" (--device-type; its "
         "types: fast, slow)"),
    ]
    bad = 0
    for extra, want in cases:
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            rc = train_main(["--model-spec", spec, "--steps", "1", "--quiet", *extra])
        got = err.getvalue().strip()
        if rc != 1 or got != want:
            print(f"emulated: {' '.join(extra)}: exit {rc}, message\n  {got}\nexpected\n  {want}")
            bad += 1
    print(f"emulated: {len(cases) - bad} of {len(cases)} option refusals exact")
    return bad == 0


def run_plan(spec, plan, cluster, mixcclrun):
    tmp = harness.workdir()
    try:
        report = os.path.join(tmp, "report.json")
        rc, _ = harness.mixcclrun(mixcclrun, "host:2", plan, spec, 4, report,
                                  ["--cluster", cluster, "--slowdown-base", "1.5"])
        if rc != 0:
            print(f"emulated: the plan's run failed (exit {rc})")
            return False
        with open(report) as f:
            r = json.load(f)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    slowdowns = [x["slowdown"] for x in r["ranks"]]
    print(f"emulated: rank slowdowns {slowdowns} (device types "
          f"{[x['device_type'] for x in r['ranks']]})")
    steps = r["steps"][KEPT_STEPS]
    compute = [statistics.mean(s["ranks"][k]["compute_s"] for s in steps) for k in (0, 1)]
    slept = [statistics.mean(s["ranks"][k]["emulated_s"] for s in steps) for k in (0, 1)]
    ratio = compute[1] / compute[0]
    print(f"emulated: compute per step fast {compute[0] * 1e3:.2f} ms (slept {slept[0] * 1e3:.2f}),"
          f" slow {compute[1] * 1e3:.2f} ms (slept {slept[1] * 1e3:.2f}): slow / fast {ratio:.2f}")
    ok = slowdowns == [1.5, 48.0] and ratio >= 2.0 and slept[1] > 0.5 * compute[1]
    print(f"emulated: run {'as emulated' if ok else 'NOT as emulated'} "
          "(slowdowns [1.5, 48.0], slow / fast >= 2, the slow rank slept most of its compute)")
    return ok


def profile_check(spec_path, cluster):
    from mixccl.train.profiler import profile
    from mixccl.train.spec import load_model_spec
    import torch
    torch.set_num_threads(1)
    p = profile(load_model_spec(spec_path), cluster, None, [2], 1)
    block = {e["device_type"]: e["forward_ms"] + e["backward_ms"] for e in p["entries"]
             if "part" not in e}
    ratio = block["slow"] / block["fast"]
    ok = ratio >= 2.0
    print(f"emulated: profiled block fast {block['fast']:.3f} ms, slow {block['slow']:.3f} ms: "
          f"slow / fast {ratio:.2f} {'>=' if ok else 'NOT >='} 2")
    return ok


def main():
    spec, plan, cluster, mixcclrun = sys.argv[1:5]
    ok = refusals(spec, plan, cluster)
    ok = run_plan(spec, plan, cluster, mixcclrun) and ok
    ok = profile_check(spec, cluster) and ok
    return 0 if ok else 1


sys.exit(main())
