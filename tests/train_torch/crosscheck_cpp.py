"""mixccl.train against mixccl-train, step by step, on the same model, weights and data.

mixccl-train runs its GPT (one process, with --debug-state: the weights it starts from and the
batches it read); mixccl.train then trains the same GPT through its --model-module adapter
(trainer_gpt_parts.py: train/tests/torch_gpt.py loaded from that start.ckpt) on the same token
file, with the same AdamW hyperparameters (two groups: decay on matrices and embeddings),
clipping and micro-batch count. Checked: every step's batch of mixccl-train's dump equals the
sequences mixccl.train reads for that step, and every step's loss and gradient norm agree
within 1e-5 relative. Both trainers run fp32 on one CPU thread.

  crosscheck_cpp.py TRAINER STEPS single                        # one process each
  crosscheck_cpp.py TRAINER STEPS pipeline MIXCCLRUN ADAPTORS   # a 2-stage 1F1B plan each
  crosscheck_cpp.py TRAINER STEPS hetero MIXCCLRUN ADAPTORS     # 2 replicas, 1 and 2 stages

`single` also shows that the comparison fails when the two runs differ: mixccl.train once more
with its own default weight decay (0.1 against the trainer's 0.5 here) must be reported from
step 2 on. Exits 77 (a skip) when torch or numpy does not import.
"""
import json
import os
import shutil
import struct
import subprocess
import sys

try:
    import numpy as np
    import torch  # noqa: F401  (the adapter needs it; a skip when it is missing)
except Exception as e:
    print(f"SKIP: the cross-check needs torch and numpy: {type(e).__name__}: {e}")
    sys.exit(77)

import harness
from mixccl.train.data import TokenData
from trainer_gpt_parts import STATE_VARIABLE

BOUND = 1e-5
MODULE = ["--model-module", os.path.join(harness.HERE, "trainer_gpt_parts.py") + ":build_parts"]
# torch_crosscheck.py's model: 2 layers, 32 channels, 4 heads, T 16, vocabulary 256, G 4; lr
# and weight decay large enough that a wrong update moves the losses far past the bound, and
# a clip that some steps reach and others do not.
LAYERS, CHANNELS, HEADS, SEQ, VOCAB, BATCH, MICRO = 2, 32, 4, 16, 256, 4, 2
HYPER = {"lr": 0.01, "weight-decay": 0.5, "grad-clip": 1.5}
# 64 symbols in the data: over all 256, most appear once in a few steps, and AdamW (lr 0.01)
# turns the rounding of their embedding rows' gradients into updates that differ by up to
# 5e-3 after 10 steps, between mixccl-train and torch_gpt.py alone too (torch_crosscheck.py
# --dtype float32 on such a dump: gradient norms 1e-4 apart), so that data measures AdamW's
# conditioning, not the trainers.
SYMBOLS = 64
# mixccl.train's AdamW constants (runner.py); the dump's must be the same.
BETAS_EPS = (0.9, 0.95, 1e-8)


def write_token_file(path, num_tokens=1 << 14):
    """mixccl.train's generated tokens (a learnable Markov chain over SYMBOLS of the model's
    VOCAB tokens) as a MIXTOKS1 file, which both trainers read with --data."""
    tokens = TokenData.generated(SYMBOLS, num_tokens).tokens.numpy().astype(np.uint8)
    with open(path, "wb") as f:
        f.write(b"MIXTOKS1" + struct.pack("<IIIIQ", 1, 1, SYMBOLS, 0, len(tokens)))
        f.write(tokens.tobytes())


def model_spec(path):
    """The planner's model spec of mixccl-train's GPT, which mixccl.train needs."""
    with open(path, "w") as f:
        json.dump({"name": f"mixccl-train-gpt-L{LAYERS}-C{CHANNELS}", "num_layers": LAYERS,
                   "hidden_size": CHANNELS, "ffn_hidden_size": 4 * CHANNELS,
                   "num_attention_heads": HEADS, "vocab_size": VOCAB, "seq_length": SEQ,
                   "global_batch_size": BATCH, "param_dtype": "fp32", "gated_mlp": False}, f)


def pipeline_plan(path):
    """Two stages of one layer each, 2 micro-batches of 2 sequences."""
    stages = [{"group": 0, "stage": s, "device_type": "cpu", "layers": [s, s + 1], "tp": 1,
               "dp": 1, "micro_batch": BATCH // MICRO} for s in range(2)]
    with open(path, "w") as f:
        json.dump({"global_batch_size": BATCH, "seq_length": SEQ, "micro_batches": MICRO,
                   "stages": stages}, f)


def hetero_plan(path):
    """Two data-parallel replicas of different shapes: one rank with the whole model and
    micro-batches of 3 sequences, and a 2-stage pipeline (its first stage recomputing) with
    micro-batches of 1: gradients of each layer AllReduced among the two ranks that hold it,
    weighted by tokens (3 : 1)."""
    whole = {"group": 0, "stage": 0, "device_type": "cpu", "layers": [0, LAYERS], "tp": 1,
             "dp": 1, "micro_batch": 3}
    halves = [{"group": 1, "stage": s, "device_type": "cpu", "layers": [s, s + 1], "tp": 1,
               "dp": 1, "micro_batch": 1, **({"recompute": 1} if s == 0 else {})}
              for s in range(2)]
    with open(path, "w") as f:
        json.dump({"global_batch_size": BATCH, "seq_length": SEQ, "micro_batches": BATCH // 4,
                   "stages": [whole, *halves]}, f)


PLANS = {"pipeline": (pipeline_plan, "2-stage pipeline"),
         "hetero": (hetero_plan, "replicas of 1 and 2 stages, micro-batches 3 and 1")}


def trainer_args(steps, data, plan=None):
    """mixccl-train's options; with a plan, the plan gives the batch and micro-batches."""
    batch = ["--plan", plan] if plan else ["--global-batch", str(BATCH), "--micro-batches",
                                           str(MICRO)]
    return ["--layers", str(LAYERS), "--channels", str(CHANNELS), "--heads", str(HEADS),
            "--seq-len", str(SEQ), "--vocab", str(VOCAB), *batch, "--seed", "7", "--data", data,
            "--steps", str(steps), "--quiet",
            *[x for k, v in HYPER.items() for x in (f"--{k}", str(v))]]


def run_trainer(cmd):
    rc, out = harness.run(cmd, env={"OPENBLAS_NUM_THREADS": "1"})
    if rc != 0:
        raise SystemExit(f"crosscheck_cpp: {' '.join(cmd[:2])} ... failed (exit {rc})")


def check_dump(state, data):
    """The dump's hyperparameters are those mixccl.train is given, and its batches are the
    sequences mixccl.train reads (docs/training.md, "Data"); returns the dump's meta.json."""
    with open(os.path.join(state, "meta.json")) as f:
        meta = json.load(f)
    hp = meta["adamw"]
    got = (hp["beta1"], hp["beta2"], hp["eps"], hp["learning_rate"], hp["weight_decay"],
           hp["grad_clip"])
    want = (*BETAS_EPS, HYPER["lr"], HYPER["weight-decay"], HYPER["grad-clip"])
    if any(abs(a - b) > 1e-6 * abs(b) for a, b in zip(got, want)):  # fp32 against double
        raise SystemExit(f"crosscheck_cpp: mixccl-train's AdamW (betas, eps, lr, weight decay, "
                         f"clip) {got} are not mixccl.train's {want}")
    tokens, targets = (np.load(os.path.join(state, n + ".npy")) for n in ("tokens", "targets"))
    reader = TokenData.open(data)
    for k in range(meta["steps"]):
        x, y = reader.sequences(k * BATCH, BATCH, SEQ)
        if not (np.array_equal(x.numpy(), tokens[k]) and np.array_equal(y.numpy(), targets[k])):
            raise SystemExit(f"crosscheck_cpp: step {k + 1}'s batch differs between the trainers")
    print(f"crosscheck_cpp: data: the {meta['steps']} steps' batches of mixccl-train's dump equal "
          f"mixccl.train's ({BATCH} sequences of {SEQ} tokens each)")
    return meta


def report_steps(path):
    with open(path) as f:
        steps = json.load(f)["steps"]
    return [s["loss"] for s in steps], [s["grad_norm"] for s in steps]


def compare(what, cpp, torch_run, steps, clip, bound=BOUND):
    """Per-step relative differences of loss and gradient norm; returns the steps beyond bound."""
    (cl, cg), (tl, tg) = cpp, torch_run
    if len(cl) != steps or len(tl) != steps:
        raise SystemExit(f"crosscheck_cpp: {what}: {len(cl)} and {len(tl)} steps, want {steps}")
    dl = [abs(a - b) / abs(b) for a, b in zip(cl, tl)]
    dg = [abs(a - b) / abs(b) for a, b in zip(cg, tg)]
    for k in range(steps):
        print(f"  step {k + 1:3d}  loss {cl[k]:.7f} {tl[k]:.7f} ({dl[k]:.1e})  |g| {cg[k]:.5f} "
              f"{tg[k]:.5f} ({dg[k]:.1e})")
    beyond = [k + 1 for k in range(steps) if not (dl[k] <= bound and dg[k] <= bound)]
    clipped = sum(g > clip for g in cg) if clip > 0 else 0
    print(f"crosscheck_cpp: {what}: {steps} steps ({clipped} clipped), losses {cl[0]:.6f} -> "
          f"{cl[-1]:.6f}, largest relative difference: loss {max(dl):.2e}, gradient norm "
          f"{max(dg):.2e}; steps beyond {bound:g}: {beyond}")
    return beyond


def torch_args(data, hyper=HYPER):
    return [*MODULE, "--data", data, *[x for k, v in hyper.items() for x in (f"--{k}", str(v))]]


def single(tmp, trainer, steps, data, spec):
    state = os.path.join(tmp, "state")
    cpp_report, py_report = os.path.join(tmp, "cpp.json"), os.path.join(tmp, "torch.json")
    run_trainer([trainer, *trainer_args(steps, data), "--debug-state", state,
                 "--report", cpp_report])
    check_dump(state, data)
    os.environ[STATE_VARIABLE] = state
    rc, _ = harness.single(spec, steps, py_report, MICRO, torch_args(data))
    if rc != 0:
        raise SystemExit(f"crosscheck_cpp: mixccl.train failed (exit {rc})")
    beyond = compare("single process", report_steps(cpp_report), report_steps(py_report), steps,
                     HYPER["grad-clip"])
    # The comparison can fail: the same run with mixccl.train's default weight decay.
    wrong = os.path.join(tmp, "torch-wd.json")
    default_decay = {k: v for k, v in HYPER.items() if k != "weight-decay"}
    rc, _ = harness.single(spec, steps, wrong, MICRO, torch_args(data, default_decay))
    if rc != 0:
        raise SystemExit(f"crosscheck_cpp: mixccl.train (weight decay 0.1) failed (exit {rc})")
    caught = compare("weight decay 0.1 in mixccl.train", report_steps(cpp_report),
                     report_steps(wrong), steps, HYPER["grad-clip"])
    print(f"crosscheck_cpp: a weight decay of 0.1 against 0.5 is caught from step "
          f"{caught[0] if caught else None}")
    return 0 if not beyond and caught and caught[0] == 2 else 1


def planned(tmp, trainer, steps, data, spec, case, mixcclrun, adaptors):
    state, plan = os.path.join(tmp, "state"), os.path.join(tmp, "plan.json")
    write_plan, what = PLANS[case]
    write_plan(plan)
    cpp_single = os.path.join(tmp, "cpp-single.json")
    cpp_report, py_report = os.path.join(tmp, "cpp.json"), os.path.join(tmp, "torch.json")
    # The single process writes the weights both pipelines start from (mixccl-train's
    # initialisation does not depend on the split) and the batches.
    run_trainer([trainer, *trainer_args(steps, data), "--debug-state", state,
                 "--report", cpp_single])
    check_dump(state, data)
    run_trainer([mixcclrun, "--adaptors", adaptors, trainer, *trainer_args(steps, data, plan),
                 "--report", cpp_report])
    os.environ[STATE_VARIABLE] = state
    rc, _ = harness.mixcclrun(mixcclrun, adaptors, plan, spec, steps, py_report,
                              torch_args(data))
    if rc != 0:
        raise SystemExit(f"crosscheck_cpp: mixccl.train's plan ({what}) failed (exit {rc})")
    beyond = compare(what, report_steps(cpp_report), report_steps(py_report), steps,
                     HYPER["grad-clip"])
    beyond_single = compare(f"{what} against mixccl-train's single process",
                            report_steps(cpp_single), report_steps(py_report), steps,
                            HYPER["grad-clip"])
    return 0 if not beyond and not beyond_single else 1


def main():
    if len(sys.argv) < 4 or sys.argv[3] not in ("single", *PLANS) or (
            sys.argv[3] in PLANS and len(sys.argv) != 6):
        print(__doc__.split("\n\n")[2], file=sys.stderr)
        return 2
    trainer, steps, case = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    tmp = harness.workdir()
    try:
        data, spec = os.path.join(tmp, "tokens.mixtoks"), os.path.join(tmp, "spec.json")
        write_token_file(data)
        model_spec(spec)
        if case == "single":
            return single(tmp, trainer, steps, data, spec)
        return planned(tmp, trainer, steps, data, spec, case, sys.argv[4], sys.argv[5])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
