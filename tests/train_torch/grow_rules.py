"""The join's rules without processes: where a joiner's rank goes (grow.grown_order) and why the
job refuses one (grow._problem), with the exact messages."""
import os
import sys
import unittest
from types import SimpleNamespace

from mixccl.train.grow import _problem, grown_order, settings
from mixccl.train.spec import load_model_spec

HERE = os.path.dirname(os.path.abspath(__file__))
SPEC = os.path.join(HERE, "tiny3.json")
CLUSTER = os.path.join(HERE, "cluster_replicas_4.json")


def job_args(**changed):
    a = dict(steps=10, seed=1, lr=1e-3, weight_decay=0.1, grad_clip=1.0, data=None,
             model_module=None, checkpoint=None, checkpoint_every=0, slowdown_base=1.0,
             model_spec=SPEC, cluster=CLUSTER)
    a.update(changed)
    return SimpleNamespace(**a)


class GrowRules(unittest.TestCase):
    def setUp(self):
        self.spec = load_model_spec(SPEC)
        self.job = SimpleNamespace(args=job_args(), spec=self.spec)

    def request(self, device_type="slow", spec=None, **changed):
        return {"device_type": device_type,
                "settings": settings(job_args(**changed), spec or self.spec)}

    def test_joiner_goes_after_its_type(self):
        self.assertEqual(grown_order(["fast", "fast", "slow"], "slow"),
                         (["fast", "fast", "slow", "slow"], [0, 1, 2], 3))
        self.assertEqual(grown_order(["fast", "fast", "slow"], "fast"),
                         (["fast", "fast", "fast", "slow"], [0, 1, 3], 2))
        self.assertEqual(grown_order(["fast", "slow"], "gpu"), (["fast", "slow", "gpu"], [0, 1], 2))

    def test_the_job_s_options_are_taken(self):
        self.assertIsNone(_problem(self.job, self.request()))

    def test_differing_options_are_named(self):
        self.assertEqual(_problem(self.job, self.request(lr=0.002, steps=20)),
                         "it runs --steps 20 (the job's: 10), --lr 0.002 (the job's: 0.001): "
                         "give it the job's options")
        other = load_model_spec(SPEC)
        other.hidden_size = 64
        self.assertEqual(_problem(self.job, self.request(spec=other)),
                         f"it runs a model spec that differs from the job's {SPEC}: give it "
                         "the job's options")

    def test_unknown_device_type(self):
        self.assertEqual(_problem(self.job, self.request("tpu")),
                         f"its device type tpu is not in the cluster spec {CLUSTER} (its types: "
                         "fast, slow)")


if __name__ == "__main__":
    sys.exit(unittest.main())
