"""A rank killed in the middle of training ends the job with an error naming it, within the
timeout, on the rank that waited for it (never a hang). The ranks are started here (torchrun's
environment, a TCP store on a free port) so that the test can kill one of them.

  dead_rank.py SPEC PLAN NRANKS VICTIM"""
import os
import signal
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    spec, plan, n, victim = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = []
    for r in range(n):
        env = dict(os.environ, RANK=str(r), WORLD_SIZE=str(n), LOCAL_RANK=str(r),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "mixccl.train", "--model-spec", spec, "--plan", plan,
             "--steps", "100000", "--threads", "1", "--timeout", "20"],
            env=env, stdout=subprocess.PIPE if r == 0 else subprocess.DEVNULL,
            stderr=subprocess.PIPE, text=True, start_new_session=True))
    try:
        # Wait for rank 0's second step line: the job is training (lanes and groups formed).
        for _ in range(2):
            line = procs[0].stdout.readline()
            print(line, end="")
        procs[victim].kill()
        t0 = time.monotonic()
        codes = {}
        for r, p in enumerate(procs):
            if r != victim:
                _, err = p.communicate(timeout=60)
                codes[r] = p.returncode
                last = [l for l in err.splitlines() if l.startswith("mixccl.train:")]
                print(f"rank {r}: exit {p.returncode}: {last[-1] if last else '(no message)'}")
        elapsed = time.monotonic() - t0
        print(f"dead_rank: survivors ended {elapsed:.1f} s after rank {victim} was killed, "
              f"exits {codes}")
        return 0 if all(c == 1 for c in codes.values()) else 1
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
            p.wait()


sys.exit(main())
