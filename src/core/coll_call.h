// One collective call, as every entry point describes it: the descriptor the argument checks,
// the mismatch check, logging and dispatch all read (NCCL's ncclInfo). What a kind means
// (its name, op, root, buffer shapes) comes from the kind table in base/collective_kind.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "base/call_stamp.h"
#include "base/collective_kind.h"
#include "mixccl.h"

namespace mixccl {

struct CollCall {
  CollKind kind;
  const void* sendbuf;
  void* recvbuf;
  size_t count;  // as the API call counts it (per rank for AllGather, ReduceScatter, ...)
  mixcclDataType_t type;
  mixcclRedOp_t op;  // reductions only
  int root;          // rooted collectives only
  void* stream;

  const CollKindSpec& spec() const { return collSpec(kind); }
};

// Bytes of the send and receive buffers of call on rank (0 where the rank has none).
void callBytes(const CollCall& call, int rank, int nranks, size_t* send, size_t* recv);

CollDesc collDescOf(const CollCall& call);

// The stamp every message of the call carries (base/call_stamp.h), from the same fields.
uint64_t callStampOf(const CollCall& call);

// "mixcclAllReduce (count 12, datatype float32, op sum)". Every field is range-checked before
// it indexes a name table: descriptors also come from other processes.
std::string describeCollDesc(const CollDesc& d);

}  // namespace mixccl
