"""Runs tests of PyTorch's own distributed suite
(torch/testing/_internal/distributed/distributed_test.py, shipped in the torch wheel) against
one backend, the way torch's test_distributed_spawn.py does.

    BACKEND=mixccl WORLD_SIZE=2 python3 torch_suite.py test_all_reduce_sum test_broadcast ...
    BACKEND=mixccl WORLD_SIZE=2 python3 torch_suite.py --all      # the whole suite
    BACKEND=mixccl MIXCCL_SUITE_AS_GLOO=1 WORLD_SIZE=2 python3 torch_suite.py test_get_future
                                                  # a test the suite runs only for gloo

For backend "mixccl" the backend is registered first and named in the suite's feature sets
("plugin", and "ddp"/"subgroup", which mixccl implements) so its tests are not skipped.
Exit status 0 when every named test passed, or was skipped for the reason EXPECTED_SKIPS lists
for it and this backend; a named test skipped otherwise fails the run (a torch that starts
skipping a test of the CI subset must not pass silently). --all runs the whole suite, where
the suite's own skips (tests for other backends, GPUs) are expected and only reported.
"""

import os
import sys
import tempfile
import unittest

os.environ.setdefault("WORLD_SIZE", "2")
os.environ.setdefault("TEMP_DIR", tempfile.mkdtemp(prefix="mixccl-torch-suite-"))
BACKEND = os.environ.setdefault("BACKEND", "mixccl")

from torch.testing._internal.common_distributed import DistTestCases  # noqa: E402

if BACKEND == "mixccl":
    import mixccl.torch  # noqa: F401  (registers the backend)

    for feature in ("plugin", "ddp", "subgroup"):
        DistTestCases.backend_feature[feature].add("mixccl")

# MIXCCL_SUITE_AS_GLOO=1 with BACKEND=mixccl: the suite's decorators (read at import) see
# "gloo", so the tests it runs only for a backend named gloo are collected, then every process
# group is made with mixccl (the module's BACKEND, read when a test runs).
AS_GLOO = BACKEND == "mixccl" and os.environ.get("MIXCCL_SUITE_AS_GLOO") == "1"
if AS_GLOO:
    os.environ["BACKEND"] = "gloo"

import torch.testing._internal.distributed.distributed_test as distributed_test  # noqa: E402
from torch.testing._internal.distributed.distributed_test import (  # noqa: E402
    DistributedTest,
    TestDistBackend,
)

if AS_GLOO:
    distributed_test.BACKEND = "mixccl"
    os.environ["BACKEND"] = "mixccl"


# (backend, test) -> the reason the suite gives when it skips that test for that backend. A named
# test may be skipped only for the reason listed here.
EXPECTED_SKIPS = {
    ("mixccl", "test_batch_isend_irecv_nccl"): "NCCL Batch Send Recv Only",
}


def unexpected_skips(skipped, backend):
    """Messages for the skips of named tests that EXPECTED_SKIPS does not list with that reason."""
    problems = []
    for test, reason in skipped:
        name = test.id().rsplit(".", 1)[-1]
        listed = EXPECTED_SKIPS.get((backend, name))
        if listed is None:
            problems.append(f"torch_suite: {name} was skipped ({reason}) and EXPECTED_SKIPS "
                            f"does not list it for backend {backend}")
        elif listed != reason:
            problems.append(f"torch_suite: {name} was skipped ({reason}), but EXPECTED_SKIPS "
                            f"lists it for backend {backend} with another reason ({listed})")
        else:
            print(f"torch_suite: {name} skipped as listed: {reason}")
    return problems


class TestDistBackendWithSpawn(TestDistBackend, DistributedTest._DistTestBase):
    def setUp(self):
        super().setUp()
        self._spawn_processes()


def main(argv):
    loader = unittest.TestLoader()
    if argv == ["--all"]:
        suite = loader.loadTestsFromTestCase(TestDistBackendWithSpawn)
    else:
        suite = unittest.TestSuite(TestDistBackendWithSpawn(name) for name in argv)
    result = unittest.TextTestRunner(verbosity=2).run(suite)
    if not result.wasSuccessful():
        return 1
    if argv != ["--all"]:
        problems = unexpected_skips(result.skipped, "mixccl" if BACKEND == "mixccl" else BACKEND)
        for line in problems:
            print(line, file=sys.stderr)
        if problems:
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
