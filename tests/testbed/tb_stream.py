"""Throughput probe for the testbed self-test: host 0 receives, every other host sends N bytes.

Run on every host by testbed.sh exec; host 0 prints one line per sender:
  stream from <addr>: <bytes> bytes in <s>s = <Mbit/s> Mbit/s
"""
import os
import socket
import sys
import time

PORT = 40000
host = int(os.environ["MIXCCL_TESTBED_HOST"])
nhosts = int(os.environ["MIXCCL_TESTBED_NHOSTS"])
host0 = os.environ["MIXCCL_TESTBED_HOST0_ADDR"]
nbytes = int(sys.argv[1])

if host == 0:
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((host0, PORT))
    srv.listen(nhosts)
    srv.settimeout(30)
    for _ in range(nhosts - 1):
        conn, peer = srv.accept()
        got, start = 0, time.monotonic()
        while True:
            chunk = conn.recv(1 << 16)
            if not chunk:
                break
            got += len(chunk)
        secs = time.monotonic() - start
        print("stream from %s: %d bytes in %.3fs = %.1f Mbit/s" % (peer[0], got, secs, got * 8 / secs / 1e6))
        if got != nbytes:
            sys.exit("short stream: %d of %d bytes" % (got, nbytes))
else:
    deadline = time.monotonic() + 20
    while True:
        try:
            conn = socket.create_connection((host0, PORT), timeout=5)
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
    conn.sendall(b"\0" * nbytes)
    conn.close()
