"""Failures on backend "mixccl": a rank killed with SIGKILL mid-allreduce, a rank missing from a
monitored barrier, and what destroy_process_group leaves behind (nothing). Ranks are plain
processes (fault_worker.py) so that one can die for real."""

import os
import subprocess
import sys
import tempfile
import time
import unittest

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fault_worker.py")


def run_job(mode, size, env=None, limit_s=120, rank_env=None):
    """Starts size ranks (rank_env: extra environment per rank); returns (per-rank exit codes,
    per-rank RESULT lines, seconds)."""
    with tempfile.TemporaryDirectory() as tmp:
        init = f"file://{tmp}/store"
        start = time.monotonic()
        procs = [subprocess.Popen([sys.executable, WORKER, mode, str(r), str(size), init],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                  env={**os.environ, **(env or {}),
                                       **((rank_env or {}).get(r, {}))})
                 for r in range(size)]
        outs = [p.communicate(timeout=limit_s)[0] for p in procs]
        elapsed = time.monotonic() - start
    results = [next((ln[len("RESULT "):] for ln in o.splitlines() if ln.startswith("RESULT ")),
                    "no RESULT line:\n" + o[-2000:]) for o in outs]
    return [p.returncode for p in procs], results, elapsed


class TestMixcclFaults(unittest.TestCase):
    def test_killed_rank_raises_within_timeout(self):
        codes, results, _ = run_job("kill", 3, {"FAULT_PG_TIMEOUT_S": "20"})
        self.assertEqual(codes[2], -9, results[2])
        for r in (0, 1):
            self.assertEqual(codes[r], 0, results[r])
            self.assertRegex(results[r], r"^raised DistBackendError after ")
            self.assertIn("mixccl allreduce: ", results[r])
            self.assertRegex(results[r], r"rank 2\b")  # the dead peer is named
            seconds = float(results[r].split(" after ")[1].split(" s:")[0])
            self.assertLess(seconds, 20.0, results[r])  # within the group's timeout

    def test_abort_ends_a_blocked_collective(self):
        codes, results, _ = run_job("abort", 2, {"FAULT_PG_TIMEOUT_S": "60"})
        self.assertEqual(codes, [0, 0], results)
        self.assertRegex(results[0], r"^raised DistBackendError after ")
        self.assertIn("mixccl allreduce: ", results[0])
        self.assertIn("mixcclCommAbort was called", results[0])
        seconds = float(results[0].split(" after ")[1].split(" s:")[0])
        self.assertLess(seconds, 2.0, results[0])  # at once, not at the 60 s timeout

    def test_monitored_barrier_names_missing_rank(self):
        codes, results, _ = run_job("monitored", 3)
        self.assertEqual(codes, [0, 0, 0], results)
        self.assertEqual(results[0], "raised DistBackendError: mixccl monitored_barrier: Rank 2 "
                                     "failed to pass monitoredBarrier in 2000 ms")

    def test_device_adaptor_without_cuda_raises_at_the_call(self):
        # mixccl's simulated device adaptor (tests/hetero) stands in for nccl: no GPU needed. The
        # group forms; the first operation (barrier) would stage through CUDA memory, which this
        # machine lacks: it raises on the caller's thread.
        simdev = {"MIXCCL_ADAPTOR": "simdev", "MIXCCL_PLUGIN_PATH": os.environ["MIXCCL_SIMDEV_PATH"]}
        codes, results, _ = run_job("device_adaptor", 2, {"FAULT_PG_TIMEOUT_S": "20"},
                                    rank_env={1: simdev})
        self.assertEqual(codes, [0, 0], results)
        self.assertEqual(results[1], "raised RuntimeError: mixccl barrier: this rank's adaptor "
                                     "takes device memory, so its tensors go through CUDA memory, "
                                     "but torch sees no CUDA device here")
        self.assertRegex(results[0], "^raised DistBackendError: ")  # its peer left

    def test_destroy_leaves_no_threads_or_files(self):
        codes, results, _ = run_job("destroy", 2)
        self.assertEqual(results, ["threads left 0 shm left []"] * 2)
        self.assertEqual(codes, [0, 0])


if __name__ == "__main__":
    unittest.main()
