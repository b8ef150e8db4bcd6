// Recursive-doubling AllReduce for small messages: log2(n) exchange steps of the whole buffer.
// Ranks beyond the largest power of two first hand their data to a partner and get the result
// back at the end. Partners combine the same two partial results, so every rank ends with
// bitwise the same values.
#include <cstring>
#include <vector>

#include "algo/algorithms.h"
#include "algo/reduce.h"

namespace mixccl {

Result recursiveDoublingAllReduce(CollContext& c, const void* sendbuf, void* recvbuf,
                                  size_t count, mixcclDataType_t type, mixcclRedOp_t op) {
  const int n = c.nranks, r = c.rank;
  const size_t bytes = count * dataTypeSize(type);
  char* out = static_cast<char*>(recvbuf);
  Transfers& t = c.transfers;
  int pow2 = 1;
  while (pow2 * 2 <= n) pow2 *= 2;
  const int extra = n - pow2;

  if (r >= pow2) {  // hand the data to r - pow2 and wait for the result
    Transfer s = t.send(r - pow2, sendbuf, bytes);
    Transfer rv = t.recv(r - pow2, out, bytes);
    MIXCCL_CHECK(t.wait(s));
    MIXCCL_CHECK(t.wait(rv));
    return mixcclSuccess;
  }
  std::vector<char> tmp(bytes);
  if (r < extra) {
    MIXCCL_CHECK(t.wait(t.recv(r + pow2, tmp.data(), bytes)));
    reduce(out, sendbuf, tmp.data(), count, type, op);
  } else if (bytes && out != sendbuf) {
    memcpy(out, sendbuf, bytes);
  }
  for (int mask = 1; mask < pow2; mask <<= 1) {
    int partner = r ^ mask;
    Transfer s = t.send(partner, out, bytes);
    Transfer rv = t.recv(partner, tmp.data(), bytes);
    MIXCCL_CHECK(t.wait(rv));
    MIXCCL_CHECK(t.wait(s));  // out is overwritten next
    reduce(out, out, tmp.data(), count, type, op);
  }
  if (op == mixcclAvg) divideBy(out, count, type, n);
  if (r < extra) MIXCCL_CHECK(t.wait(t.send(r + pow2, out, bytes)));
  return mixcclSuccess;
}

}  // namespace mixccl
