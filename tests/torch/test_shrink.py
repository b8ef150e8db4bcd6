"""torch.distributed.shrink_group and abort on backend "mixccl" (docs/reliability.md, "PyTorch"):
4 ranks under `mixcclrun --keep-going` (shrink_worker.py), one killed with SIGKILL in the middle
of an all_reduce; the survivors' error names it, they shrink, and every collective on the new
group is exact. Also a healthy shrink, mismatched exclude lists, the backend's revoke(), and
destroy after a death.

Needs MIXCCLRUN (the launcher's path)."""

import os
import re
import subprocess
import sys
import tempfile
import time
import unittest

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "shrink_worker.py")
CHECKS = ["size", "formed_by", "all_reduce", "broadcast", "all_gather", "reduce_scatter",
          "send_recv"]


def run_job(mode, ranks=4, env=None, limit_s=120):
    """(mixcclrun's exit status, {rank: [lines]}, mixcclrun's own stderr lines, seconds)."""
    with tempfile.TemporaryDirectory() as tmp:
        start = time.monotonic()
        proc = subprocess.run([os.environ["MIXCCLRUN"], "--keep-going", "-np", str(ranks),
                               sys.executable, WORKER, mode, os.path.join(tmp, "store")],
                              capture_output=True, text=True, timeout=limit_s,
                              env={**os.environ, **(env or {})})
        elapsed = time.monotonic() - start
    lines = {r: [] for r in range(ranks)}
    own = []
    for line in (proc.stdout + proc.stderr).splitlines():
        m = re.match(r"\[(\d+)\] (.*)", line)
        if m:
            lines[int(m.group(1))].append(m.group(2))
        elif line.startswith("mixcclrun:"):
            own.append(line)
    return proc.returncode, lines, own, elapsed


def result(lines, prefix="RESULT "):
    return [ln[len(prefix):] for ln in lines if ln.startswith(prefix)]


class TestMixcclShrink(unittest.TestCase):
    def assertChecks(self, lines, names):
        self.assertEqual([ln for ln in lines if ln.startswith("CHECK ")],
                         [f"CHECK {n} ok" for n in names], "\n".join(lines))

    def test_kill_mid_all_reduce_then_shrink(self):
        code, lines, own, _ = run_job("kill")
        self.assertEqual(code, 0, (lines, own))
        self.assertRegex(own[0], r"^mixcclrun: rank 3 \(pid \d+\) was killed by signal 9 \(Killed\); the "
                                 r"others go on \(--keep-going\)$")
        self.assertEqual(own[-1], "mixcclrun: --keep-going: lost rank(s) 3; the others completed")
        for r in range(3):
            res = result(lines[r])
            self.assertEqual(len(res), 2, lines[r])
            # The error names the dead rank (its peer's view: "rank 3 (host pid N)").
            self.assertRegex(res[0], r"^raised DistBackendError after [0-9.]+ s: mixccl allreduce: "
                                     r"rank \d: .*rank 3 \(\S+ pid \d+\)")
            self.assertRegex(res[1], r"^shrink [0-9.]+ s, kill to working group [0-9.]+ s$")
            self.assertLess(float(res[1].split()[-2]), 20.0 + 1.0)  # timeout + 1 s
            self.assertChecks(lines[r], ["default_group"] + CHECKS)

    def test_healthy_shrink(self):
        code, lines, own, _ = run_job("healthy")
        self.assertEqual(code, 0, (lines, own))
        self.assertEqual(own, [])
        for r in range(4):
            self.assertEqual(result(lines[r]), ["done"], lines[r])
            self.assertChecks(lines[r], (CHECKS if r in (0, 2) else []) + ["world_after"])

    def test_mismatched_exclude_lists_raise_on_every_rank(self):
        code, lines, own, _ = run_job("mismatch")
        self.assertEqual(code, 0, (lines, own))
        for r in range(3):
            self.assertEqual(result(lines[r]), [
                f"raised DistBackendError: mixccl shrink: rank {r}: mixcclCommShrink: rank 1 "
                "excludes {2} but rank 0 excludes {3}: every surviving rank must pass the same "
                "exclude list"])
        for r in range(4):
            self.assertChecks(lines[r], ["parent_after"])

    def test_revoke_releases_ranks_waiting_on_the_revoker(self):
        code, lines, own, _ = run_job("revoke", env={"SHRINK_PG_TIMEOUT_S": "60"})
        self.assertEqual(code, 0, (lines, own))
        self.assertRegex(result(lines[1])[0], r"^revoked after [0-9.]+ s$")
        # Rank 0 waited in an irecv from rank 1: its lane (numbered 0-1 by itself) fails as
        # rank 1 aborts it (a cut connection or the abort's notice, whichever comes first).
        # Rank 2 waited in an all_reduce: the revoke itself reaches it.
        waits = {0: r"mixccl recv: rank \d: (connection to )?rank \d \(\S+ pid \d+\) failed",
                 2: r"mixccl allreduce: rank 2: the communicator was revoked by rank 1 "
                    r"\(\S+ pid \d+\) \(mixcclCommRevoke\)$"}
        for r, message in waits.items():
            res = result(lines[r])
            self.assertEqual(len(res), 1, lines[r])
            m = re.match(r"raised DistBackendError after ([0-9.]+) s: " + message, res[0])
            self.assertTrue(m, res[0])
            self.assertLess(float(m.group(1)), 5.0)  # the revoke came after 0.5 s; timeout 60 s
        for r in range(3):
            self.assertChecks(lines[r], CHECKS)
        self.assertEqual(result(lines[3]), ["left"])

    def test_destroy_after_a_peer_died_returns_at_once(self):
        code, lines, own, _ = run_job("destroy_dead", ranks=3, env={"SHRINK_PG_TIMEOUT_S": "60"})
        self.assertEqual(code, 0, (lines, own))
        for r in range(2):
            res = result(lines[r])
            self.assertEqual(len(res), 1, lines[r])
            m = re.fullmatch(r"destroy took ([0-9.]+) s, 5 of 5 works failed", res[0])
            self.assertTrue(m, res[0])
            self.assertLess(float(m.group(1)), 2.0)  # not the 60 s timeout


if __name__ == "__main__":
    unittest.main()
