// Binomial-tree Broadcast and Reduce for small messages: ceil(log2 n) rounds instead of the
// chain's n-1 hops, which is what makes small rooted collectives hold at many ranks. Positions
// count from the root (v = rank - root mod n); v's parent is v without its lowest set bit, its
// children v + m for each power of two m below that bit (every m for the root) while v + m < n.
// The message travels whole (no chunks): above MIXCCL_RD_THRESHOLD the pipelined chain wins.
#include <cstring>
#include <vector>

#include "algo/algorithms.h"
#include "algo/chunking.h"
#include "algo/reduce.h"
#include "base/env.h"

namespace mixccl {
namespace {

int lowestBit(int v, int n) {
  if (v == 0) {
    int m = 1;
    while (m < n) m <<= 1;
    return m;  // the root: every power of two below n is a child's distance
  }
  return v & -v;
}

}  // namespace

Result binomialTreeBroadcast(CollContext& c, const void* sendbuf, void* recvbuf, size_t count,
                             mixcclDataType_t type, int root) {
  const int n = c.nranks, r = c.rank;
  const size_t bytes = count * dataTypeSize(type);
  char* out = static_cast<char*>(recvbuf);
  if (r == root && bytes && sendbuf != out) memcpy(out, sendbuf, bytes);
  if (n == 1 || bytes == 0) return mixcclSuccess;
  const int v = modRank(r - root, n);
  const int low = lowestBit(v, n);
  Transfers& t = c.transfers;
  if (v != 0) MIXCCL_CHECK(t.wait(t.recv(modRank(v - low + root, n), out, bytes)));
  // The farthest subtree first: it has the most rounds still ahead.
  for (int m = low >> 1; m >= 1; m >>= 1)
    if (v + m < n) t.send(modRank(v + m + root, n), out, bytes);
  return t.waitAll();
}

Result binomialTreeReduce(CollContext& c, const void* sendbuf, void* recvbuf, size_t count,
                          mixcclDataType_t type, mixcclRedOp_t op, int root) {
  const int n = c.nranks, r = c.rank;
  const size_t bytes = count * dataTypeSize(type);
  const char* in = static_cast<const char*>(sendbuf);
  if (n == 1 || bytes == 0) {
    if (r == root && bytes && in != recvbuf) memcpy(recvbuf, in, bytes);
    return mixcclSuccess;
  }
  const int v = modRank(r - root, n);
  const int low = lowestBit(v, n);
  Transfers& t = c.transfers;
  // Children's partial results, nearest first: the nearest finishes its subtree soonest.
  std::vector<int> children;
  for (int m = 1; m < low; m <<= 1)
    if (v + m < n) children.push_back(modRank(v + m + root, n));
  // The root accumulates in recvbuf, every other rank in a buffer of its own.
  std::vector<char> own(v == 0 ? 0 : bytes);
  char* acc = v == 0 ? static_cast<char*>(recvbuf) : own.data();
  if (acc != in) memcpy(acc, in, bytes);
  std::vector<char> got(children.empty() ? 0 : children.size() * bytes);
  std::vector<Transfer> recvs;
  for (size_t i = 0; i < children.size(); ++i)
    recvs.push_back(t.recv(children[i], got.data() + i * bytes, bytes));
  for (size_t i = 0; i < children.size(); ++i) {
    MIXCCL_CHECK(t.wait(recvs[i]));
    reduce(acc, acc, got.data() + i * bytes, count, type, op);
  }
  if (v == 0) {
    if (op == mixcclAvg) divideBy(acc, count, type, n);
  } else {
    t.send(modRank(v - low + root, n), acc, bytes);
  }
  return t.waitAll();
}

bool useBinomialTree(size_t bytes, int nranks) {
  if (env().algo == "ring") return false;
  return nranks > 2 && bytes < env().rdThresholdBytes;
}

}  // namespace mixccl
