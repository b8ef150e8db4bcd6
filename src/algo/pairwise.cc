// AlltoAll, Gather and Scatter as one batch of point-to-point transfers, all in flight at once.
#include <cstring>
#include <vector>

#include "algo/algorithms.h"
#include "algo/reduce.h"

namespace mixccl {

Result pairwiseAlltoAll(CollContext& c, const void* sendbuf, void* recvbuf, size_t count,
                        mixcclDataType_t type) {
  const int n = c.nranks, r = c.rank;
  const size_t block = count * dataTypeSize(type);
  const char* in = static_cast<const char*>(sendbuf);
  char* out = static_cast<char*>(recvbuf);
  // In place, blocks would be overwritten while they are still being sent: send from a copy.
  std::vector<char> copy;
  if (in == out && n > 1) {
    copy.assign(in, in + block * n);
    in = copy.data();
  }
  Transfers& t = c.transfers;
  for (int k = 1; k < n; ++k) {  // staggered so that not every rank talks to rank 0 first
    int to = (r + k) % n, from = (r - k + n) % n;
    t.recv(from, out + (size_t)from * block, block);
    t.send(to, in + (size_t)to * block, block);
  }
  // (block == 0 may come with NULL buffers: no pointer arithmetic or memcpy on them then)
  if (block && in + (size_t)r * block != out + (size_t)r * block)
    memcpy(out + (size_t)r * block, in + (size_t)r * block, block);
  return t.waitAll();
}

Result directGather(CollContext& c, const void* sendbuf, void* recvbuf, size_t count,
                    mixcclDataType_t type, int root) {
  const int n = c.nranks, r = c.rank;
  const size_t block = count * dataTypeSize(type);
  Transfers& t = c.transfers;
  if (r != root) {
    t.send(root, sendbuf, block);
    return t.waitAll();
  }
  char* out = static_cast<char*>(recvbuf);
  for (int k = 1; k < n; ++k) {
    int from = (r + k) % n;
    t.recv(from, out + (size_t)from * block, block);
  }
  if (block && sendbuf != out + (size_t)r * block) memcpy(out + (size_t)r * block, sendbuf, block);
  return t.waitAll();
}

Result directScatter(CollContext& c, const void* sendbuf, void* recvbuf, size_t count,
                     mixcclDataType_t type, int root) {
  const int n = c.nranks, r = c.rank;
  const size_t block = count * dataTypeSize(type);
  Transfers& t = c.transfers;
  if (r != root) {
    t.recv(root, recvbuf, block);
    return t.waitAll();
  }
  const char* in = static_cast<const char*>(sendbuf);
  for (int k = 1; k < n; ++k) {
    int to = (r + k) % n;
    t.send(to, in + (size_t)to * block, block);
  }
  if (block && recvbuf != in + (size_t)r * block) memcpy(recvbuf, in + (size_t)r * block, block);
  return t.waitAll();
}

}  // namespace mixccl
