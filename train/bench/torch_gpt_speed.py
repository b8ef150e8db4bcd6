"""The trainer's model in PyTorch, for speed only (docs/training.md, "Measurements" (d)).

The same GPT as train/src/gpt_model.cc (train/tests/torch_gpt.py, which the cross-check
test checks against the trainer); AdamW with weight decay on matrices and embeddings and
global-norm clipping at 1. fp32, eager mode, on `--threads` CPU threads. Prints
one JSON line: {"tokens_per_s": median over the timed steps, "step_ms": ...}.

  python3 train/bench/torch_gpt_speed.py --layers 4 --channels 64 --heads 4 --seq-len 64 \
      --batch 8 --steps 20 --threads 1
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from torch_gpt import Gpt, adamw  # noqa: E402  (the model, shared with torch_crosscheck.py)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--channels", type=int, default=64)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--seq-len", type=int, default=64)
    p.add_argument("--vocab", type=int, default=256)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--threads", type=int, default=1)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    model = Gpt(a.vocab, a.seq_len, a.channels, a.heads, a.layers)
    opt = adamw(model, lr=1e-3, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1)
    g = torch.Generator().manual_seed(1)
    data = torch.randint(0, a.vocab, (a.batch, a.seq_len + 1), generator=g)
    inputs, targets = data[:, :-1].contiguous(), data[:, 1:].contiguous()
    times = []
    for step in range(a.steps + 1):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        _, loss = model(inputs, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step > 0:  # the first step pays for allocations, as in the trainer's report
            times.append(time.perf_counter() - t0)
    step_s = statistics.median(times)
    print(json.dumps({"tokens_per_s": a.batch * a.seq_len / step_s, "step_ms": step_s * 1e3,
                      "torch": torch.__version__, "threads": a.threads}))


if __name__ == "__main__":
    main()
