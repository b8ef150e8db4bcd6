"""Measurement 4 of docs/training.md (mixccl.train), two comparisons:
  single vs plain   in one process, alternating step by step: a mixccl.train single-process
                    step (Trainer.train_step) and a step of the same model trained the usual
                    way in plain PyTorch (forward, mean loss, backward, clip_grad_norm_,
                    torch.optim.AdamW), same data, THREADS torch threads; median steps
  1rank vs single   python -m mixccl.train as one process, and with a 1-stage 1-replica plan
                    under torchrun, fresh processes alternating REPS times; per run the median
                    step (step 1 left out), then the median over the runs
Run under the measurement lock:
  flock /tmp/mixccl-measure.lock python3 tests/train_torch/bench/speed.py SPEC [STEPS REPS THREADS]"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch
import torch.nn.functional as F


def single_vs_plain(spec_path, steps, threads):
    """Median step of each, alternating in this process (the same machine state for both)."""
    from mixccl.train.cli import parser
    from mixccl.train.model import build_llama_parts
    from mixccl.train.runner import Trainer
    from mixccl.train.spec import load_model_spec
    args = parser().parse_args(["--model-spec", spec_path, "--steps", str(steps), "--threads",
                                str(threads), "--quiet"])
    spec = load_model_spec(spec_path)
    trainer = Trainer(args, spec)
    parts = build_llama_parts(spec, 0, spec.num_layers, True, True, 1)
    blocks = [parts.blocks[str(i)] for i in parts.layers]
    opt = torch.optim.AdamW(parts.parameters(), lr=1e-3, betas=(0.9, 0.95), weight_decay=0.1)
    g = spec.global_batch_size

    def plain_step(step):
        x, y = trainer.data.sequences(step * g, g, spec.seq_length)
        h = parts.embedding(x)
        for b in blocks:
            h = b(h)
        loss = F.cross_entropy(parts.head(h).flatten(0, 1), y.flatten())
        loss.backward()
        torch.nn.utils.clip_grad_norm_(parts.parameters(), 1.0)
        opt.step()
        opt.zero_grad()

    ours, plain = [], []
    for step in range(steps):
        t0 = time.perf_counter()
        trainer.train_step()
        ours.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        plain_step(step)
        plain.append(time.perf_counter() - t0)
    return statistics.median(ours[1:]), statistics.median(plain[1:])


def report_median(path):
    with open(path) as f:
        return statistics.median(s["step_s"] for s in json.load(f)["steps"][1:])


def main():
    spec = os.path.abspath(sys.argv[1])
    steps, reps, threads = (int(a) for a in (sys.argv[2:] + ["30", "5", "1"][len(sys.argv) - 2:])[:3])
    with open(spec) as f:
        s = json.load(f)
    tokens = s["global_batch_size"] * s["seq_length"]
    tmp = tempfile.mkdtemp()
    plan = os.path.join(tmp, "plan.json")
    with open(plan, "w") as f:
        json.dump({"global_batch_size": s["global_batch_size"], "seq_length": s["seq_length"],
                   "micro_batches": 1, "stages": [{"group": 0, "stage": 0, "layers": [0, s["num_layers"]],
                   "tp": 1, "dp": 1, "micro_batch": s["global_batch_size"]}]}, f)
    common = ["-m", "mixccl.train", "--model-spec", spec, "--steps", str(steps), "--threads",
              str(threads), "--quiet", "--grad-clip", "1.0"]
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    torch.set_num_threads(threads)
    ours, plain = single_vs_plain(spec, steps * reps, threads)
    results = {"single": [], "1rank": []}
    for rep in range(reps):
        r = os.path.join(tmp, "single.json")
        subprocess.run([sys.executable, *common, "--report", r], check=True, env=env)
        results["single"].append(report_median(r))
        r = os.path.join(tmp, "1rank.json")
        subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone",
                        "--nproc-per-node", "1", *common, "--plan", plan, "--report", r],
                       check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        results["1rank"].append(report_median(r))
        print(f"round {rep + 1}: " + ", ".join(f"{k} {v[-1] * 1e3:.2f} ms" for k, v in results.items()),
              flush=True)
    med = {k: statistics.median(v) for k, v in results.items()}
    print(f"model {s['name']}, {tokens} tokens per step, {threads} thread(s), torch {torch.__version__}")
    print(f"in one process, {steps * reps} steps alternating: mixccl.train {ours * 1e3:.2f} ms "
          f"({tokens / ours:.0f} tokens/s), plain PyTorch {plain * 1e3:.2f} ms "
          f"({tokens / plain:.0f} tokens/s): single / plain tokens/s {plain / ours:.3f}")
    print(f"{reps} rounds of {steps} steps, fresh processes: single {med['single'] * 1e3:.2f} ms, "
          f"1-rank plan under torchrun {med['1rank'] * 1e3:.2f} ms: 1rank / single tokens/s "
          f"{med['single'] / med['1rank']:.3f} (overhead {100 * (med['1rank'] / med['single'] - 1):.1f}%)")


main()
