#include "base/collective_kind.h"

namespace mixccl {
namespace {

constexpr BufferShape kBlock{false, false};        // count elements, every rank
constexpr BufferShape kAllBlocks{true, false};     // count * nranks elements, every rank
constexpr BufferShape kRootBlock{false, true};     // count elements, the root only
constexpr BufferShape kRootAllBlocks{true, true};  // count * nranks elements, the root only

// Index = CollKind. NCCL's shapes: the count of AllGather is per rank (sendcount), of
// ReduceScatter per rank too (recvcount); AlltoAll/Gather/Scatter move count elements per pair.
// pairwise: only the kinds whose one step is "each block to its rank" (mixccl's pairwise.cc).
//  kind                      API name               name             reduces rooted pairwise send            recv
constexpr CollKindSpec kSpecs[kNumCollKinds] = {
    {CollKind::AllReduce,     "mixcclAllReduce",     "allreduce",     true,  false, false, kBlock,         kBlock},
    {CollKind::Broadcast,     "mixcclBroadcast",     "broadcast",     false, true,  false, kRootBlock,     kBlock},
    {CollKind::Reduce,        "mixcclReduce",        "reduce",        true,  true,  false, kBlock,         kRootBlock},
    {CollKind::AllGather,     "mixcclAllGather",     "allgather",     false, false, false, kBlock,         kAllBlocks},
    {CollKind::ReduceScatter, "mixcclReduceScatter", "reducescatter", true,  false, false, kAllBlocks,     kBlock},
    {CollKind::AlltoAll,      "mixcclAlltoAll",      "alltoall",      false, false, true,  kAllBlocks,     kAllBlocks},
    {CollKind::Gather,        "mixcclGather",        "gather",        false, true,  true,  kBlock,         kRootAllBlocks},
    {CollKind::Scatter,       "mixcclScatter",       "scatter",       false, true,  true,  kRootAllBlocks, kBlock},
};

// The table is indexed by the enum: a row out of place would give one kind another's shape.
constexpr bool rowsInEnumOrder() {
  for (int k = 0; k < kNumCollKinds; ++k)
    if ((int)kSpecs[k].kind != k) return false;
  return true;
}
static_assert(rowsInEnumOrder(), "kSpecs rows must follow CollKind's values");

}  // namespace

const CollKindSpec& collSpec(CollKind kind) { return kSpecs[(int)kind]; }

bool collKindFromInt(int32_t value, CollKind* kind) {
  if (value < 0 || value >= kNumCollKinds) return false;
  *kind = (CollKind)value;
  return true;
}

}  // namespace mixccl
