#include "algo/slot_collectives.h"

#include <cstring>
#include <string>

#include "algo/reduce.h"
#include "base/error.h"

namespace mixccl {
namespace {

size_t publishedBytes(const SlotCall& c, int rank, int nranks) {
  return collSpec(c.kind).send.elements(c.count, rank, nranks, c.root) * dataTypeSize(c.type);
}

SlotStamp stampOf(const SlotCall& c) {
  SlotStamp s;
  s.kind = (int16_t)c.kind;
  s.type = (int16_t)c.type;
  s.op = collSpec(c.kind).reduces ? (int32_t)c.op : 0;
  s.root = collSpec(c.kind).rooted ? c.root : -1;
  s.count = c.count;
  return s;
}

std::string describe(const SlotStamp& s) {
  CollKind kind;
  std::string d = collKindFromInt(s.kind, &kind) ? collSpec(kind).name : "an unknown collective";
  d += " of " + std::to_string(s.count) + " " + dataTypeName((mixcclDataType_t)s.type);
  if (collKindFromInt(s.kind, &kind) && collSpec(kind).reduces)
    d += std::string(", op ") + redOpName((mixcclRedOp_t)s.op);
  if (s.root >= 0) d += ", root " + std::to_string(s.root);
  return d;
}

// out = slot 0 op slot 1 op ... (rank order), each block at offset `at` of the ranks' slots.
void reduceAll(const ShmSlots& s, uint64_t seq, size_t at, size_t count, mixcclDataType_t type,
               mixcclRedOp_t op, void* out) {
  const int n = s.nranks();
  reduce(out, s.dataOf(0, seq) + at, s.dataOf(1, seq) + at, count, type, op);
  for (int q = 2; q < n; ++q) reduce(out, out, s.dataOf(q, seq) + at, count, type, op);
  if (op == mixcclAvg) divideBy(out, count, type, n);
}

}  // namespace

bool fitsSlots(const ShmSlots& slots, const SlotCall& call) {
  if (call.count == 0 || slots.nranks() < 2) return false;
  // The largest part: the root's where only the root publishes, the same on every rank else.
  const BufferShape& send = collSpec(call.kind).send;
  return call.count * send.multiplier(slots.nranks()) * dataTypeSize(call.type) <= slots.slotBytes();
}

Result slotCollective(ShmSlots& s, const SlotCall& c, double timeoutS, Health& health) {
  const CollKindSpec& spec = collSpec(c.kind);
  const int n = s.nranks(), me = s.rank();
  const SlotStamp mine = stampOf(c);
  const uint64_t seq = s.publish(mine, c.sendbuf, publishedBytes(c, me, n));
  MIXCCL_CHECK(s.waitForAll(seq, timeoutS, health, spec.apiName));
  // Every rank compares every stamp, so all of them reach the same verdict.
  for (int q = 0; q < n; ++q) {
    const SlotHeader& h = s.headerOf(q, seq);
    if (!(h.stamp == mine) || h.bytes != publishedBytes(c, q, n))
      return raiseError(mixcclInvalidUsage,
                        "rank %d: %s: this rank called %s, rank %d called %s (every rank must make "
                        "the same collective calls in the same order)",
                        me, spec.apiName, describe(mine).c_str(), q, describe(h.stamp).c_str());
  }
  const size_t es = dataTypeSize(c.type), block = c.count * es;
  char* out = static_cast<char*>(c.recvbuf);
  switch (c.kind) {
    case CollKind::AllReduce:
      reduceAll(s, seq, 0, c.count, c.type, c.op, out);
      break;
    case CollKind::Reduce:
      if (me == c.root) reduceAll(s, seq, 0, c.count, c.type, c.op, out);
      break;
    case CollKind::ReduceScatter:
      reduceAll(s, seq, (size_t)me * block, c.count, c.type, c.op, out);
      break;
    case CollKind::Broadcast:
      memcpy(out, s.dataOf(c.root, seq), block);
      break;
    case CollKind::AllGather:
      for (int q = 0; q < n; ++q) memcpy(out + (size_t)q * block, s.dataOf(q, seq), block);
      break;
    case CollKind::AlltoAll:
      for (int q = 0; q < n; ++q) memcpy(out + (size_t)q * block, s.dataOf(q, seq) + (size_t)me * block, block);
      break;
    case CollKind::Gather:
      if (me == c.root)
        for (int q = 0; q < n; ++q) memcpy(out + (size_t)q * block, s.dataOf(q, seq), block);
      break;
    case CollKind::Scatter:
      memcpy(out, s.dataOf(c.root, seq) + (size_t)me * block, block);
      break;
  }
  return mixcclSuccess;
}

}  // namespace mixccl
