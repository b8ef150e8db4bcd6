#!/usr/bin/env python3
"""Writes the seed inputs of tests/fuzz/corpus/<target>/ (well-formed messages the fuzzers
start from). Run from anywhere; it rewrites only files named seed-*. Layouts follow
src/transport/frame.h, src/bootstrap/{auth.cc,rendezvous_wire.h,exchange_wire.h,peer_info.h,unique_id.h} and
src/core/mismatch_check.h; the input framing follows tests/fuzz/fuzz_*.cc."""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
FRAME_MAGIC = 0x4D524646
BYE = 1


def frame(seq, total, offset, length, flags=0, fill=0x5A):
    return struct.pack("<IIQQII", FRAME_MAGIC, seq, total, offset, length, flags) + bytes([fill]) * length


def transport_input(nsocks, sizes, send, streams):
    ctl = (nsocks - 1) | (len(sizes) << 1) | (int(send) << 3)
    out = bytes([ctl]) + b"".join(struct.pack("<H", s) for s in sizes)
    out += struct.pack("<H", len(streams[0]))
    return out + b"".join(streams)


def wire_addr(port=5000):
    return struct.pack("<HHI16s", 2, port, 0, bytes([127, 0, 0, 1]) + bytes(12))


def peer_info(rank):
    return struct.pack("<iiQ64s24s16sii", rank, 1000 + rank, 0x1234, b"host%d" % rank, wire_addr(5000 + rank),
                       b"host", -1, 0)


def rank_hello(rank, nranks):
    return (struct.pack("<Iiii", 0x4C4C4548, nranks, rank, 1) + peer_info(rank) +
            struct.pack("<iI", 0, 0) + wire_addr(6000 + rank))


def tree_neighbour(rank):
    return struct.pack("<iI", rank, 0) + peer_info(rank) + wire_addr(6000 + rank)


def placement(parent, children):
    empty = bytes(len(tree_neighbour(0)))
    out = struct.pack("<ii", int(parent is not None), len(children))
    out += tree_neighbour(parent) if parent is not None else empty
    out += b"".join(tree_neighbour(c) for c in children)
    return out + empty * (4 - len(children))


def write(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "seed-" + name), "wb") as f:
        f.write(data)


def main():
    # Transport: whole messages, split messages, two connections, bye, early frames.
    write("transport", "one-small", transport_input(1, [100], False, [frame(0, 100, 0, 100)]))
    write("transport", "two-messages",
          transport_input(1, [100, 5000], True,
                          [frame(0, 100, 0, 100) + frame(1, 5000, 0, 4096) + frame(1, 5000, 4096, 904)]))
    write("transport", "two-sockets",
          transport_input(2, [8000], False, [frame(0, 8000, 4000, 4000), frame(0, 8000, 0, 4000)]))
    write("transport", "zero-then-bye",
          transport_input(1, [0], False, [frame(0, 0, 0, 0) + frame(0, 0, 0, 0, BYE)]))
    write("transport", "early-frame", transport_input(1, [10], False, [frame(1, 10, 0, 10)]))
    write("transport", "three-recvs-out-of-order",
          transport_input(2, [10, 20, 30], False,
                          [frame(2, 30, 0, 30) + frame(0, 10, 0, 10), frame(1, 20, 0, 20)]))
    # Bootstrap: one per parser (first byte = mode).
    hello = struct.pack("<II16s", 0x3143584D, 1, bytes(range(16)))
    write("bootstrap", "server-hello", bytes([0]) + hello + bytes(32))
    write("bootstrap", "client-challenge", bytes([1]) + struct.pack("<II16s32s", 0x3143584D, 1, bytes(16), bytes(32)))
    hellos = b"".join(bytes([3]) + rank_hello(r, 3) for r in (2, 0, 1))
    write("bootstrap", "rank-hellos", bytes([2]) + hellos)
    write("bootstrap", "rank-hellos-duplicate", bytes([2]) + bytes([3]) + rank_hello(0, 2) + bytes([3]) + rank_hello(0, 2))
    reply = struct.pack("<ii248s", 0, 2, b"")
    # Rank 1 of 2 (byte 0x41: 2 ranks, rank 1, one root): its parent is rank 0, no children.
    write("bootstrap", "root-reply", bytes([3, 0x41]) + reply + placement(0, []))
    write("bootstrap", "root-refusal", bytes([3, 1]) + struct.pack("<ii248s", 6, 0, b"rank 3 left" * 30))
    desc = struct.pack("<IiiiiIQ", 0x4B434843, 0, 7, 0, -1, 4, 12)
    write("bootstrap", "mismatch-equal", bytes([4]) + desc * 3)
    write("bootstrap", "mismatch-differ", bytes([4]) + desc + struct.pack("<IiiiiIQ", 0x4B434843, 1, 7, -1, 0, 4, 10))
    uid = struct.pack("<II24s16sQI", 0x4449584D, 1, wire_addr(), bytes(16), 42, 0)
    write("bootstrap", "unique-id", bytes([5]) + uid)
    # Rank 1 of 4 (byte 0x13): its child 3 says hello and sends its subtree (itself).
    exchange = struct.pack("<IiQ", 0x48435845, 3, 0) + struct.pack("<ii248s", 0, 1, b"") + peer_info(3)
    write("bootstrap", "exchange", bytes([6, 0x13]) + exchange)
    write("bootstrap", "exchange-failure",
          bytes([6, 0x13]) + struct.pack("<IiQ", 0x48435845, 3, 0) + struct.pack("<ii248s", 6, 0, b"rank 3 left"))


if __name__ == "__main__":
    main()
