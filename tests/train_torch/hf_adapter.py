"""The transformers adapter: a LlamaForCausalLM built from the model spec (random weights,
nothing downloaded) gives through mixccl.train's parts exactly the logits of its own forward,
and a 2-stage plan of it trains with the single process's losses (relative difference <= 1e-5).
Exit 77 (a skip) when transformers is not installed.

  hf_adapter.py SPEC PLAN NRANKS STEPS mixcclrun PATH ADAPTORS"""
import os
import shutil
import sys

import harness

MODULE = ["--model-module", "mixccl.train.hf:build_parts"]


def main():
    try:
        import transformers
    except ImportError:
        print("skipped: transformers is not installed (scripts/setup.sh installs it)")
        return 77
    import torch
    from mixccl.train import hf
    from mixccl.train.spec import load_model_spec
    spec_path, plan, n, steps = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    spec = load_model_spec(spec_path)
    torch.manual_seed(1)
    model = transformers.LlamaForCausalLM(hf.llama_config_from_spec(spec)).float()
    parts = hf.hf_causal_lm_parts(model)
    tokens = torch.randint(0, spec.vocab_size, (2, spec.seq_length))
    with torch.no_grad():
        h = parts.embedding(tokens)
        for k in parts.layers:
            h = parts.blocks[str(k)](h)
        diff = (parts.head(h) - model(input_ids=tokens).logits).abs().max().item()
    print(f"transformers {transformers.__version__}: logits through the parts differ from "
          f"the model's own by {diff:.1e}")
    if diff > 1e-6:
        return 1
    tmp = harness.workdir()
    try:
        ref, got = os.path.join(tmp, "single.json"), os.path.join(tmp, "plan.json")
        rc1, _ = harness.single(spec_path, steps, ref, harness.plan_micro_batches(plan), MODULE)
        rc2, _ = harness.launch(sys.argv[5:], plan, n, spec_path, steps, got, MODULE)
        if rc1 or rc2:
            print(f"hf_adapter: a run failed (exits {rc1}, {rc2})")
            return 1
        a, b = harness.losses(ref), harness.losses(got)
        worst = max(abs(x - y) / abs(x) for x, y in zip(a, b))
        ok = len(a) == len(b) == steps and worst <= 1e-5
        print(f"hf_adapter: {len(b)} of {steps} steps of the plan, losses {a[0]:.6f} -> "
              f"{a[-1]:.6f}, largest relative difference {worst:.2e} "
              f"{'<=' if ok else 'NOT <='} 1e-05")
        return 0 if ok else 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


sys.exit(main())
