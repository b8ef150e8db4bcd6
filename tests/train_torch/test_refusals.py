"""Every refusal before training: the exact message, exit status 1, and nothing started (the
checks run before the process group forms, so each case runs in this one process as the rank
the environment names)."""
import contextlib
import io
import json
import os
import sys
import tempfile
import unittest
from unittest import mock

from mixccl.train.cli import main

HERE = os.path.dirname(os.path.abspath(__file__))
SPEC = os.path.join(HERE, "tiny3.json")
PLAN = os.path.join(HERE, "plans", "hetero_3.json")
CLUSTER = os.path.join(HERE, "cluster_small.json")


class Refusals(unittest.TestCase):
    def refuse(self, args, rank=0, world=3, plan=None):
        if plan is not None:
            fd, path = tempfile.mkstemp(suffix=".json")
            with os.fdopen(fd, "w") as f:
                json.dump(plan, f)
            self.addCleanup(os.unlink, path)
            args = ["--plan", path] + args
            self.plan_path = path
        err = io.StringIO()
        env = {"RANK": str(rank), "WORLD_SIZE": str(world)}
        with mock.patch.dict(os.environ, env), contextlib.redirect_stderr(err):
            os.environ.pop("MIXCCL_RANK", None)
            rc = main(["--model-spec", SPEC, "--steps", "1", "--quiet"] + args)
        self.assertEqual(rc, 1, err.getvalue())
        return err.getvalue().strip()

    def hetero(self):
        with open(PLAN) as f:
            return json.load(f)

    def test_survive_needs_a_cluster_spec(self):
        self.assertEqual(self.refuse(["--plan", PLAN, "--survive", "unused"]),
                         "mixccl.train: --survive needs --cluster CLUSTER.json: the planner "
                         "re-plans for the devices left")

    def test_rank_count(self):
        self.assertEqual(self.refuse(["--plan", PLAN], world=4),
                         f"mixccl.train: {PLAN}: the plan runs on 3 ranks, the job has 4")

    def test_layers_do_not_cover_the_model(self):
        p = self.hetero()
        p["stages"][2]["layers"] = [2, 4]
        self.assertEqual(self.refuse([], plan=p),
                         f"mixccl.train: {self.plan_path}: group 1's pipeline ends at layer 4, "
                         f"the model spec {SPEC} has num_layers 3")

    def test_stage_gap_names_the_rank(self):
        p = self.hetero()
        p["stages"][2]["layers"] = [1, 3]
        self.assertEqual(self.refuse([], plan=p),
                         f"mixccl.train: {self.plan_path}: group 1 stage 1 (rank 2): layers "
                         "[1, 3) do not continue the pipeline at layer 2")

    def test_micro_batches_do_not_fill_the_batch(self):
        p = self.hetero()
        p["stages"][0]["micro_batch"] = 2
        self.assertEqual(self.refuse([], plan=p),
                         f"mixccl.train: {self.plan_path}: the replicas' micro-batches add up to "
                         f"3 sequences per slot; a global batch of 8 ({SPEC}) in 2 micro-batches "
                         "needs 4")

    def test_seq_length(self):
        p = self.hetero()
        p["seq_length"] = 32
        self.assertEqual(self.refuse([], plan=p),
                         f"mixccl.train: {self.plan_path}: seq_length 32 differs from the model "
                         f"spec's 16 ({SPEC})")

    def test_tensor_parallel(self):
        p = self.hetero()
        p["stages"][0]["tp"] = 2
        self.assertEqual(self.refuse([], world=4, plan=p),
                         f"mixccl.train: {self.plan_path}: group 0 stage 0 (ranks 0,1): tp 2; "
                         "mixccl.train runs tp 1 only (tensor parallelism runs in mixccl-train)")

    def test_device_type_not_in_cluster(self):
        p = self.hetero()
        p["stages"][0]["device_type"] = "tpu"
        self.assertEqual(self.refuse(["--cluster", CLUSTER], plan=p),
                         f"mixccl.train: {self.plan_path}: group 0 stage 0 (rank 0): device_type "
                         f"\"tpu\" is not in the cluster spec {CLUSTER} (its types: fast, slow)")

    def test_stage_does_not_fit_memory(self):
        with open(CLUSTER) as f:
            cluster = json.load(f)
        cluster["device_types"][1]["memory_gib"] = 0.5001
        fd, path = tempfile.mkstemp(suffix=".json")
        with os.fdopen(fd, "w") as f:
            json.dump(cluster, f)
        self.addCleanup(os.unlink, path)
        msg = self.refuse(["--plan", PLAN, "--cluster", path])
        self.assertRegex(msg, "^mixccl.train: " + PLAN + r": rank 1 \(group 1 stage 0, device "
                         r"type slow\): the stage needs 0\.\d MiB \(parameters, gradients, "
                         r"AdamW state, activations\), the device has 0\.1 MiB \(memory_gib - "
                         "reserved_gib in " + path + r"\)$")

    def test_missing_cuda_device(self):
        if __import__("torch").cuda.is_available():
            self.skipTest("this machine has a CUDA device")
        msg = self.refuse(["--plan", PLAN, "--device-map", "slow=cuda"], rank=2)
        self.assertEqual(msg, f"mixccl.train: rank 2: device type slow (group 1 stage 1 in "
                         f"{PLAN}) runs on cuda, but this process sees no CUDA device (map the "
                         "type to cpu with --device-map slow=cpu)")

    def test_plan_that_is_not_json(self):
        fd, path = tempfile.mkstemp(suffix=".json")
        with os.fdopen(fd, "w") as f:
            f.write("{")
        self.addCleanup(os.unlink, path)
        self.assertRegex(self.refuse(["--plan", path]),
                         "^mixccl.train: " + path + ": the plan is not valid JSON: ")

    def test_model_spec_field(self):
        fd, path = tempfile.mkstemp(suffix=".json")
        with os.fdopen(fd, "w") as f:
            json.dump({"name": "x", "num_layers": 0}, f)
        self.addCleanup(os.unlink, path)
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            rc = main(["--model-spec", path])
        self.assertEqual(rc, 1)
        self.assertEqual(err.getvalue().strip(), f"mixccl.train: model spec {path}: 'num_layers' "
                         "must be a positive integer, got 0")

    def test_no_plan_on_several_ranks(self):
        self.assertEqual(self.refuse([], rank=1, world=2),
                         "mixccl.train: rank 1: without --plan mixccl.train runs as one process, "
                         "the job has 2 (give --plan)")


if __name__ == "__main__":
    unittest.main()
