#!/usr/bin/env python3
"""Runs one command as a new user would and checks what they would see.

  expect_run.py [checks] -- COMMAND [ARGS...]

checks:
  --env VAR=VALUE       set for the command (repeatable); --unset VAR removes one
  --exit N|nonzero      expected exit status (default 0)
  --stderr-line TEXT    this exact line appears on stderr (repeatable)
  --stdout-line TEXT    this exact line appears on stdout (repeatable)
  --stderr-count TEXT=N this exact line appears exactly N times on stderr
  --stderr-regex RE     some stderr line matches RE (repeatable)
  --stdout-regex RE     some stdout line matches RE (repeatable)
  --no-stdout-regex RE  no stdout line matches RE (repeatable)
  --no-stderr-regex RE  no stderr line matches RE (repeatable)
  --stdout-json         stdout is one valid JSON document
  --max-seconds S       the command must end within S seconds (default 120)
On failure prints what differed and both outputs. Negative tests assert the exact message."""
import json
import os
import re
import subprocess
import sys
import time


def main(argv):
    if "--" not in argv:
        print(__doc__, file=sys.stderr)
        return 2
    split = argv.index("--")
    opts, cmd = argv[:split], argv[split + 1:]
    env = dict(os.environ)
    want_exit = "0"
    checks = []  # (stream, kind, arg)
    max_s = 120.0
    json_out = False
    i = 0
    while i < len(opts):
        o = opts[i]
        v = opts[i + 1] if i + 1 < len(opts) else None
        i += 2
        if o == "--env":
            k, _, val = v.partition("=")
            env[k] = val
        elif o == "--unset":
            env.pop(v, None)
        elif o == "--exit":
            want_exit = v
        elif o == "--max-seconds":
            max_s = float(v)
        elif o == "--stdout-json":
            json_out = True
            i -= 1
        elif o.startswith("--stderr-") or o.startswith("--stdout-") or o.startswith("--no-"):
            checks.append((o, v))
        else:
            print(f"expect_run: unknown option {o}", file=sys.stderr)
            return 2
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                           timeout=max_s, text=True, errors="replace")
    except subprocess.TimeoutExpired as e:
        print(f"expect_run: still running after {max_s} s: {' '.join(cmd)}")
        print("---- stdout\n" + (e.stdout or b"").decode(errors="replace"))
        print("---- stderr\n" + (e.stderr or b"").decode(errors="replace"))
        return 1
    took = time.monotonic() - t0
    out, err = p.stdout.splitlines(), p.stderr.splitlines()
    bad = []
    if want_exit == "nonzero":
        if p.returncode == 0:
            bad.append("exit status 0, expected non-zero")
    elif p.returncode != int(want_exit):
        bad.append(f"exit status {p.returncode}, expected {want_exit}")
    for o, v in checks:
        lines = err if "stderr" in o else out
        if o in ("--stderr-line", "--stdout-line"):
            if v not in lines:
                bad.append(f"{o}: no line equals {v!r}")
        elif o == "--stderr-count":
            text, _, n = v.rpartition("=")
            got = lines.count(text)
            if got != int(n):
                bad.append(f"{o}: {text!r} appears {got} times, expected {n}")
        elif o in ("--stderr-regex", "--stdout-regex"):
            if not any(re.search(v, l) for l in lines):
                bad.append(f"{o}: no line matches /{v}/")
        elif o in ("--no-stderr-regex", "--no-stdout-regex"):
            hits = [l for l in lines if re.search(v, l)]
            if hits:
                bad.append(f"{o}: /{v}/ matches {hits[0]!r}")
        else:
            bad.append(f"unknown check {o}")
    if json_out:
        try:
            json.loads(p.stdout)
        except ValueError as e:
            bad.append(f"stdout is not one JSON document: {e}")
    print(f"expect_run: {' '.join(cmd)}: exit {p.returncode} after {took:.1f} s")
    if bad:
        for b in bad:
            print("expect_run: FAILED: " + b)
        print("---- stdout (last 60 lines)\n" + "\n".join(out[-60:]))
        print("---- stderr (last 60 lines)\n" + "\n".join(err[-60:]))
        return 1
    print("expect_run: passed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
