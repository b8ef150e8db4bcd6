#!/usr/bin/env python3
"""Runs one perf tool under a launcher and checks its nccl-tests style output.

  check_perf_run.py --mixcclrun PATH --np N [--launcher mixcclrun|mpirun] [--expect-wrong]
                    [--json FILE] -- TOOL ARGS...
  check_perf_run.py --expect-usage-error -- TOOL ARGS...

Default expectation: exit status 0, the header (version, one line per rank), at least one table
row, every checked #wrong equal to 0, "# Out of bounds values : 0 OK" and a finite average bus
bandwidth. --expect-wrong (used with the tools' -X self-test flag) expects the opposite: a non-zero
exit, at least one row with #wrong > 0, and the footer saying FAILED. Exit 77 = skipped.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

ROW = re.compile(
    r"^\s*(\d+)\s+(\d+)\s+(\S+)\s+(\S+)\s+(-?\d+)"
    r"\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)"
    r"\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s*$")


def parse_rows(text):
    rows = []
    for line in text.splitlines():
        line = re.sub(r"^\[\d+\] ", "", line)
        m = ROW.match(line)
        if m:
            rows.append(m.groups())
    return rows


def fail(msg, out=""):
    sys.stderr.write("FAIL: %s\n" % msg)
    if out:
        sys.stderr.write("---- output ----\n%s\n" % out[-20000:])
    sys.exit(1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mixcclrun")
    ap.add_argument("--np", type=int, default=2)
    ap.add_argument("--launcher", default="mixcclrun", choices=["mixcclrun", "mpirun"])
    ap.add_argument("--expect-wrong", action="store_true")
    ap.add_argument("--expect-usage-error", action="store_true")
    ap.add_argument("--json")
    ap.add_argument("--timeout", type=float, default=50)
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.cmd[1:] if a.cmd and a.cmd[0] == "--" else a.cmd
    if not cmd:
        fail("no tool command given")

    env = dict(os.environ)
    env.setdefault("MIXCCL_SHM_DISABLE", "1")
    if a.expect_usage_error:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=a.timeout, env=env)
        if p.returncode != 2 or "USAGE" not in p.stderr:
            fail("expected exit 2 and a usage message, got %d" % p.returncode,
                 p.stdout + p.stderr)
        print("usage error reported as expected")
        return

    if a.launcher == "mpirun":
        mpirun = shutil.which("mpirun")
        if mpirun is None:
            print("SKIP: mpirun not found (install openmpi-bin)")
            sys.exit(77)
        full = [mpirun, "-np", str(a.np), "--oversubscribe", "--mca", "btl", "tcp,self",
                "--mca", "btl_tcp_if_include", "lo"]
        if os.geteuid() == 0:
            full.append("--allow-run-as-root")
        full += cmd
    else:
        if not a.mixcclrun:
            fail("--mixcclrun is required")
        full = [a.mixcclrun, "-np", str(a.np), "--timeout", str(a.timeout - 5)] + cmd
    if a.json and os.path.exists(a.json):
        os.unlink(a.json)
    try:
        p = subprocess.run(full, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=a.timeout, env=env)
    except subprocess.TimeoutExpired as e:
        fail("timed out after %g s" % a.timeout, (e.stdout or b"").decode(errors="replace")
             if isinstance(e.stdout, bytes) else (e.stdout or ""))
    out = p.stdout
    rows = parse_rows(out)
    if not rows:
        fail("no result rows (exit %d)" % p.returncode, out)
    if not re.search(r"^(\[0\] )?# mixccl-tests version", out, re.M):
        fail("missing version header", out)
    rank_lines = re.findall(r"^(?:\[0\] )?#\s+Rank\s+(\d+) Group\s+\d+ Pid\s+\d+ on\s+\S+ device", out,
                            re.M)
    if sorted(int(r) for r in rank_lines) != list(range(a.np)):
        fail("expected one device line per rank, got %s" % rank_lines, out)

    wrong_total = 0
    checked = 0
    for r in rows:
        for w in (r[8], r[12]):
            if w == "N/A":
                continue
            checked += 1
            wrong_total += int(w)
        for bw in (r[6], r[7], r[10], r[11]):
            float(bw)  # numbers, not garbage

    oob = re.search(r"# Out of bounds values : (\d+) (OK|FAILED)", out)
    avg = re.search(r"# Avg bus bandwidth    : (\S+)", out)
    if not oob or not avg:
        fail("missing footer", out)
    float(avg.group(1))

    if a.expect_wrong:
        if p.returncode == 0:
            fail("the tool exited 0 although errors were injected", out)
        if wrong_total == 0 or oob.group(2) != "FAILED":
            fail("injected errors were not counted", out)
        print("detected %d wrong element(s) in %d rows as expected" % (wrong_total, len(rows)))
        return

    if p.returncode != 0:
        fail("exit status %d" % p.returncode, out)
    if checked == 0:
        fail("no checked result", out)
    if wrong_total != 0 or oob.group(1) != "0" or oob.group(2) != "OK":
        fail("%d wrong element(s)" % wrong_total, out)
    if a.json:
        with open(a.json) as f:
            doc = json.load(f)
        if len(doc["results"]) != len(rows):
            fail("JSON has %d results, table %d rows" % (len(doc["results"]), len(rows)), out)
        for res, row in zip(doc["results"], rows):
            if res["size"] != int(row[0]) or res["count"] != int(row[1]):
                fail("JSON result %s does not match row %s" % (res, row), out)
            if res["out_of_place"]["nwrong"] != 0:
                fail("JSON reports errors", out)
    print("%d rows, %d checked results, 0 wrong" % (len(rows), checked))


if __name__ == "__main__":
    main()
