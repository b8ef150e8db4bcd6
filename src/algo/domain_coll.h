// Collectives among the ranks of one domain, as the hierarchical algorithms use them: either
// the domain adaptor's native library (NCCL, Gloo, MPI, ...) or, for the built-in host
// adaptor, mixccl's own algorithms over the domain's ranks. Buffers are host memory; calls
// return once finished. Ops are never mixcclAvg (callers reduce with Sum and divide once).
#pragma once

#include <cstddef>
#include <vector>

#include "adaptors/adaptor_table.h"
#include "algo/transfers.h"
#include "base/result.h"
#include "mixccl.h"

namespace mixccl {

class DomainColl {
 public:
  virtual ~DomainColl() = default;
  virtual int rank() const = 0;  // index in the domain
  virtual int size() const = 0;
  // send holds size() * recvcount elements; the rank keeps its block, reduced.
  virtual Result reduceScatter(const void* send, void* recv, size_t recvcount,
                               mixcclDataType_t type, mixcclRedOp_t op) = 0;
  // recv receives size() * sendcount elements in domain rank order. send must not overlap recv.
  virtual Result allGather(const void* send, void* recv, size_t sendcount,
                           mixcclDataType_t type) = 0;
  virtual Result broadcast(const void* send, void* recv, size_t count, mixcclDataType_t type,
                           int root) = 0;
};

// mixccl's ring algorithms over the domain's ranks (members are communicator ranks).
class HostDomainColl : public DomainColl {
 public:
  // stamp: the call stamp of the collective these steps belong to (algo/transfers.h).
  HostDomainColl(Proxy& proxy, const Deadline& deadline, const std::vector<int>& members,
                 int index, size_t chunkBytes, uint64_t stamp = 0)
      : proxy_(proxy), deadline_(deadline), members_(members), index_(index),
        chunkBytes_(chunkBytes), stamp_(stamp) {}
  int rank() const override { return index_; }
  int size() const override { return (int)members_.size(); }
  Result reduceScatter(const void* send, void* recv, size_t recvcount, mixcclDataType_t type,
                       mixcclRedOp_t op) override;
  Result allGather(const void* send, void* recv, size_t sendcount,
                   mixcclDataType_t type) override;
  Result broadcast(const void* send, void* recv, size_t count, mixcclDataType_t type,
                   int root) override;

 private:
  Proxy& proxy_;
  Deadline deadline_;
  const std::vector<int>& members_;
  int index_;
  size_t chunkBytes_;
  uint64_t stamp_;
};

// The adaptor's native collectives on its communicator (host-memory adaptors only: the
// device path stages through host buffers before it gets here). Only for tables with all three
// entries (the dispatcher checks).
class NativeDomainColl : public DomainColl {
 public:
  NativeDomainColl(const AdaptorTable& table, void* comm, int index, int size)
      : t_(table), comm_(comm), index_(index), size_(size) {}
  int rank() const override { return index_; }
  int size() const override { return size_; }
  Result reduceScatter(const void* send, void* recv, size_t recvcount, mixcclDataType_t type,
                       mixcclRedOp_t op) override;
  Result allGather(const void* send, void* recv, size_t sendcount,
                   mixcclDataType_t type) override;
  Result broadcast(const void* send, void* recv, size_t count, mixcclDataType_t type,
                   int root) override;

 private:
  const AdaptorTable& t_;
  void* comm_;
  int index_, size_;
};

}  // namespace mixccl
