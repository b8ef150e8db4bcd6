#!/usr/bin/env python3
"""Runs a command and passes only if BOTH its exit status and its output are the expected ones.

  expect_output.py [--exit N] [--skip N] REGEX -- COMMAND [ARGS...]

  --exit N   the exit status the command must end with (default 0); a negative test names
             its command's real status
  --skip N   a command that exits N (e.g. 77, nothing to test here) is a skip: this script
             exits N too, for the test's SKIP_RETURN_CODE
  REGEX      must match somewhere in the command's combined stdout and stderr (Python re,
             searched with DOTALL, as CTest's PASS_REGULAR_EXPRESSION: "." matches a newline,
             "^" is the start of the output; a "\\n" in the pattern is a newline)

The command's output is printed as it comes. Exit 0 when both hold; 1 when either does not,
after a line naming which failed with the expected and the actual value ("exit status 1,
expected 0"; "output does not match /REGEX/"); 2 for a usage error. CTest's
PASS_REGULAR_EXPRESSION alone ignores the exit status, so tests register through this instead
(docs/testing.md)."""
import re
import signal
import subprocess
import sys


def usage(msg):
    print("expect_output: %s\nusage: expect_output.py [--exit N] [--skip N] REGEX -- COMMAND..."
          % msg, file=sys.stderr)
    return 2


def describe(status):
    if status < 0:
        try:
            name = signal.Signals(-status).name
        except ValueError:
            name = "signal %d" % -status
        return "killed by %s" % name
    return "exit status %d" % status


def main(argv):
    if "--" not in argv:
        return usage("no -- before the command")
    split = argv.index("--")
    opts, cmd = argv[:split], argv[split + 1:]
    want_exit, skip, pattern = 0, None, None
    i = 0
    try:
        while i < len(opts):
            if opts[i] == "--exit":
                want_exit = int(opts[i + 1])
                i += 2
            elif opts[i] == "--skip":
                skip = int(opts[i + 1])
                i += 2
            elif pattern is None:
                pattern = opts[i]
                i += 1
            else:
                return usage("unexpected argument %r" % opts[i])
    except (IndexError, ValueError):
        return usage("--exit and --skip take a number")
    if pattern is None or not cmd:
        return usage("a REGEX and a command are required")
    try:
        regex = re.compile(pattern, re.DOTALL)
    except re.error as e:
        return usage("bad REGEX /%s/: %s" % (pattern, e))

    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    except OSError as e:
        print("expect_output: cannot run %s: %s" % (cmd[0], e))
        return 1
    # CTest ends a test past its TIMEOUT with SIGTERM/SIGKILL: take the command with us.
    def forward(signum, frame):
        proc.send_signal(signum)
        sys.exit(128 + signum)
    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    out = bytearray()
    while True:
        chunk = proc.stdout.read1(65536)
        if not chunk:
            break
        out += chunk
        sys.stdout.buffer.write(chunk)
        sys.stdout.buffer.flush()
    status = proc.wait()
    if out and not out.endswith(b"\n"):
        sys.stdout.write("\n")

    if skip is not None and status == skip:
        print("expect_output: skipped (%s)" % describe(status))
        return skip
    text = out.decode("utf-8", errors="replace")
    failed = []
    if status != want_exit:
        failed.append("%s, expected %d" % (describe(status), want_exit))
    if not regex.search(text):
        failed.append("output does not match /%s/" % pattern)
    for f in failed:
        print("expect_output: FAILED: %s" % f)
    if failed:
        return 1
    print("expect_output: passed (%s and output matching /%s/)" % (describe(status), pattern))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
