"""The profile's parts from whole passes (profiler._parts_of_a_pass), against hand-computed
values: a stage of n blocks costs pass + n x block [+ embedding] [+ head], the whole stack
exactly what it measured, and a part below zero is raised to 0 at the blocks' expense; from
repeats, the fastest of each pass times the type's slowdown."""
import sys

from mixccl.train.profiler import _parts_of_a_pass, _parts_of_repeats

# Forward: block (20 - 1 - 2 + 5) / 5 = 4.4, pass 5 - 4.4 = 0.6, embedding 0.4, head 1.4.
# Backward: block (40 - 0.5 - 4 + 10) / 5 = 9.1, pass 0.9, embedding 0.5 - 0.9 = -0.4 -> 0,
# so the blocks give back 0.4 / 4: 9.0.
passes = {"full_f": 20.0, "embedding_f": 1.0, "head_f": 2.0, "block_f": 5.0,
          "full_b": 40.0, "embedding_b": 0.5, "head_b": 4.0, "block_b": 10.0}
want = {"layer_f": 4.4, "pass_f": 0.6, "embedding_f": 0.4, "head_f": 1.4,
        "layer_b": 9.0, "pass_b": 0.9, "embedding_b": 0.0, "head_b": 3.1}
got = _parts_of_a_pass(passes, 4)
bad = [k for k in want if abs(got[k] - want[k]) > 1e-12]
for d in ("_f", "_b"):
    whole = got["pass" + d] + 4 * got["layer" + d] + got["embedding" + d] + got["head" + d]
    if abs(whole - passes["full" + d]) > 1e-12:
        bad.append("full" + d)
# A stack of one block: block (7 - 1 - 2 + 5) / 2 = 4.5, pass 0.5.
one = _parts_of_a_pass(dict(passes, full_f=7.0, full_b=14.0), 1)
if abs(one["layer_f"] - 4.5) > 1e-12 or abs(one["pass_f"] - 0.5) > 1e-12:
    bad.append("stack of 1")
# From repeats: each pass's fastest times the slowdown (3); slow spells (three of five repeats
# 1.1-1.7 times dearer) do not move it. Repeats of a third of the passes above (fastest: 1.0 x),
# so the parts are those above (the median, 1.1 x, or the mean, 1.24 x, would price every
# part 10% or 24% dearer).
reps = {k: [v / 3 * f for f in (1.0, 1.7, 1.1, 1.4, 1.0)] for k, v in passes.items()}
three = _parts_of_repeats(reps, 3.0, 4)
if any(abs(three[k] - want[k]) > 1e-9 for k in want):
    bad.append(f"repeats {three}")
print("profile_parts: " + ("all parts as computed by hand" if not bad else f"wrong: {bad} {got}"))
sys.exit(1 if bad else 0)
