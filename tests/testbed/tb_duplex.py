"""Duplex TCP probe between testbed hosts 0 and 1: both send N bytes to each other at the same
time over S connections per direction (what a cross-domain exchange does), and each host prints
  duplex h<i>: received <bytes> bytes in <s>s = <MB/s> MB/s over <S> streams
The receive rate is the goodput one direction of a shaped link gives TCP when the other
direction carries data too (headers and ACKs share the tbf budget).
  testbed.sh exec 2 --bw 200mbit -- python3 tb_duplex.py 67108864 4
"""
import os
import socket
import sys
import threading
import time

PORT = 40001
host = int(os.environ["MIXCCL_TESTBED_HOST"])
addrs = [os.environ["MIXCCL_TESTBED_HOST0_ADDR"]]
addrs.append(addrs[0].rsplit(".", 1)[0] + ".2")  # host 1 is .2 (docs/testbed.md)
nbytes = int(sys.argv[1])
streams = int(sys.argv[2]) if len(sys.argv) > 2 else 1
peer = 1 - host

srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind((addrs[host], PORT))
srv.listen(streams)
srv.settimeout(60)

got = [0] * streams
ends = [0.0] * streams
start = [None]


def receive(i, conn):
    while True:
        chunk = conn.recv(1 << 18)
        if not chunk:
            break
        if start[0] is None:
            start[0] = time.monotonic()
        got[i] += len(chunk)
    ends[i] = time.monotonic()


def accept_all():
    threads = []
    for i in range(streams):
        conn, _ = srv.accept()
        t = threading.Thread(target=receive, args=(i, conn))
        t.start()
        threads.append(t)
    for t in threads:
        t.join()


def send_one(size):
    deadline = time.monotonic() + 20
    while True:
        try:
            conn = socket.create_connection((addrs[peer], PORT), timeout=60)
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
    buf = b"\0" * (1 << 20)
    left = size
    while left > 0:
        conn.sendall(buf[: min(left, len(buf))])
        left -= min(left, len(buf))
    conn.close()


receiver = threading.Thread(target=accept_all)
receiver.start()
senders = [threading.Thread(target=send_one, args=(nbytes // streams,)) for _ in range(streams)]
for t in senders:
    t.start()
for t in senders:
    t.join()
receiver.join()
total, secs = sum(got), max(ends) - start[0]
print("duplex h%d: received %d bytes in %.3fs = %.2f MB/s over %d streams"
      % (host, total, secs, total / secs / 1e6, streams))
if total != nbytes // streams * streams:
    sys.exit("short: %d of %d bytes" % (total, nbytes // streams * streams))
