"""mixccl.train's rank map, roles, 1F1B orders and gradient cuts equal the C++ ones
(`mixccl-plan --layout`), for every plan given, and for 1F1B orders of 1-6 stages and 1-8
micro-batches beyond them.

  layout.py MIXCCL_PLAN PLAN.json..."""
import json
import subprocess
import sys

from mixccl.train.plan import layout, load_plan, one_f_one_b_order


def main():
    planner, plans = sys.argv[1], sys.argv[2:]
    failures = 0
    for path in plans:
        cpp = json.loads(subprocess.run([planner, "--layout", path], check=True, timeout=60,
                                        capture_output=True, text=True).stdout)
        py = layout(load_plan(path))
        same = cpp == py
        print(f"{path}: {py['num_ranks']} ranks, {'same' if same else 'DIFFERENT'}")
        if not same:
            failures += 1
            print(" C++:   ", json.dumps(cpp, sort_keys=True))
            print(" Python:", json.dumps(py, sort_keys=True))
    # The orders alone, over a grid, through one-stage-per-rank pipelines written here.
    grid = 0
    for stages in range(1, 7):
        for m in range(1, 9):
            plan = {"micro_batches": m, "stages": [
                {"group": 0, "stage": s, "layers": [s, s + 1], "tp": 1, "dp": 1,
                 "micro_batch": 1} for s in range(stages)]}
            proc = subprocess.run([planner, "--layout", "/dev/stdin"], input=json.dumps(plan),
                                  check=True, timeout=60, capture_output=True, text=True)
            cpp = [r["order"] for r in json.loads(proc.stdout)["ranks"]]
            py = [[("F" if f else "B") + str(i) for f, i in one_f_one_b_order(s, stages, m)]
                  for s in range(stages)]
            grid += 1
            if cpp != py:
                failures += 1
                print(f"1F1B order of {stages} stages, {m} micro-batches differs: C++ {cpp}, "
                      f"Python {py}")
    print(f"layout: {len(plans)} plans and {grid} 1F1B grids compared, {failures} different")
    return 1 if failures else 0


sys.exit(main())
