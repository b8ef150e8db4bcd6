#!/usr/bin/env python3
"""Smoke test of perf/compare with every peer that was built (the libfabric ones too: mixccl-ofi,
mpi-ofi, fi-roof): a tiny sweep on 2 ranks must give a busbw median for every peer and size, the
report must name the CPU and carry the roof columns, and the TCP, memory-copy and UCX sendrecv
roofs' own checks (-c 1, every received or copied byte compared with the sender's pattern) must
pass on 2 and 3 ranks (the UCX one also refuses a collective other than sendrecv).

  check_compare_run.py --build BUILD_DIR --compare perf/compare
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile


def fail(msg, out=""):
    sys.stderr.write("FAIL: %s\n%s\n" % (msg, out[-4000:]))
    sys.exit(1)


def have_ofi(build):
    """Whether this build has the libfabric transport (CMake cache MIXCCL_WITH_OFI)."""
    try:
        with open(os.path.join(build, "CMakeCache.txt")) as f:
            return re.search(r"^MIXCCL_WITH_OFI:BOOL=ON$", f.read(), re.M) is not None
    except OSError:
        return False


def mpi_has_ofi():
    try:
        out = subprocess.run(["ompi_info"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return False
    return re.search(r"MCA mtl: ofi\b", out) is not None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--compare", required=True)
    a = ap.parse_args()
    mixcclrun = os.path.join(a.build, "tools", "mixcclrun")
    roof = os.path.join(a.build, "perf", "tcp_roof_perf")
    memcpy_roof = os.path.join(a.build, "perf", "memcpy_roof_perf")
    ucx_roof = os.path.join(a.build, "perf", "ucx_roof_perf")
    peers = ["mixccl", "mixccl-shm", "tcp-roof", "memcpy-roof"]
    if os.access(os.path.join(a.build, "perf", "gloo_coll_perf"), os.X_OK):
        peers.append("gloo")
    if os.access(os.path.join(a.build, "perf", "mpi_coll_perf"), os.X_OK):
        peers.append("mpi-tcp")
    # The libfabric peers (opt-in in compare) where this build and host have them.
    if have_ofi(a.build):
        peers.append("mixccl-ofi")
        if "mpi-tcp" in peers and mpi_has_ofi():
            peers.append("mpi-ofi")
        if shutil.which("fi_pingpong"):
            peers.append("fi-roof")

    roofs = [(roof, ("allreduce", "allgather")), (memcpy_roof, ("allreduce",))]
    if os.access(ucx_roof, os.X_OK):  # built with UCX: the sendrecv roof, and what it refuses
        roofs.append((ucx_roof, ("sendrecv",)))
        with tempfile.TemporaryDirectory(prefix="roof-store-") as store:
            p = subprocess.run([mixcclrun, "-np", "2", ucx_roof, "-C", "allreduce", "-S", store],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               timeout=60)
        if "ucx_roof_perf: only -C sendrecv (the roof of sendrecv over UCX)" not in p.stdout:
            fail("ucx_roof_perf -C allreduce was not refused as expected", p.stdout)
    for tool, colls in roofs:
        name = os.path.basename(tool)
        for np in (2, 3):
            for coll in colls:
                with tempfile.TemporaryDirectory(prefix="roof-store-") as store:
                    p = subprocess.run([mixcclrun, "-np", str(np), tool, "-C", coll, "-S", store,
                                        "-b", "1K", "-e", "3M", "-f", "7", "-n", "2", "-w", "1",
                                        "-c", "1"], stdout=subprocess.PIPE,
                                       stderr=subprocess.STDOUT, text=True, timeout=60)
                if p.returncode != 0 or "Out of bounds values : 0 OK" not in p.stdout:
                    fail("%s -C %s on %d ranks (rc %d)" % (name, coll, np, p.returncode),
                         p.stdout)
                rows = [l for l in p.stdout.splitlines()
                        if re.search(r"\sfloat\s+(sum|none)\s", l)]
                # 1K 7K 49K 343K 2401K; columns: [rank] size count type redop root, then 4 + 4
                if len(rows) != 5 or any(l.split()[9] != "0" or l.split()[13] != "0"
                                         for l in rows):
                    fail("%s rows (want 5 sizes, #wrong 0)" % name, p.stdout)

    with tempfile.TemporaryDirectory(prefix="compare-") as out:
        p = subprocess.run([sys.executable, a.compare, "--build", a.build, "--ranks", "2",
                            "--colls", "allreduce", "--peers", ",".join(peers), "--min", "64K",
                            "--max", "128K", "--reps", "1", "--iters", "2", "--warmup", "1",
                            "--no-latency", "--out-dir", out],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=240)
        if p.returncode != 0:
            fail("perf/compare exited with %d" % p.returncode, p.stdout)
        # Not a terminal: progress is one line per run, never "\r" (a log must read line by line).
        if "\r" in p.stdout or not re.search(r"^compare: run 1/%d " % len(peers), p.stdout, re.M):
            fail("perf/compare progress is not one line per run in a log", p.stdout)
        with open(os.path.join(out, "compare.json")) as f:
            doc = json.load(f)
    if doc["peers"] != peers:
        fail("compare ran peers %s, asked for %s" % (doc["peers"], peers), p.stdout)
    # A row is a measurement even when it reads 0.00: the tools print busbw with two decimals,
    # and on a loaded machine a 64 KiB run (first-message connection setup included) rounds
    # to zero (seen with Gloo and with Open MPI over libfabric).
    have = {(d["peer"], d["size"]) for d in doc["busbw_median"] if d["busbw"] is not None}
    for peer in peers:
        for size in (64 << 10, 128 << 10):
            if (peer, size) not in have:
                fail("no busbw for %s at %d bytes" % (peer, size), p.stdout)
    if "x tcp-roof" not in doc["table"]:
        fail("the table has no mixccl/tcp-roof column", doc["table"])
    if "shm x memcpy-roof" not in doc["table"]:
        fail("the table has no mixccl-shm/memcpy-roof column", doc["table"])
    # The machine kind heads every table: lscpu's model name (or /proc/cpuinfo's), cores.
    cpu = doc["table"].splitlines()[0]
    if not re.match(r"cpu: .+, \d+ cores", cpu) or doc["machine"]["cpu"] not in cpu:
        fail("the table does not start with the CPU line", doc["table"])
    print("compare with %s: every peer measured; tcp roof checks passed" % ", ".join(peers))


if __name__ == "__main__":
    main()
