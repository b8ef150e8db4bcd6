// The collectives mixccl runs, named once: one enum, and per kind one record of its name, its
// arguments and the shape of its buffers. Argument checks, byte counts, the mismatch check,
// logging, dispatch and the plugin ABI's mixcclAdaptorColl_t all read this table, so a
// collective cannot be spelled or shaped two ways.
#pragma once

#include <cstddef>
#include <cstdint>

namespace mixccl {

// The values are on the wire (MIXCCL_CHECK_MISMATCH descriptors) and in the plugin ABI
// (mixcclAdaptorColl_t, static_assert'ed in src/adaptors): append only, never renumber.
enum class CollKind : int32_t {
  AllReduce = 0,
  Broadcast = 1,
  Reduce = 2,
  AllGather = 3,
  ReduceScatter = 4,
  AlltoAll = 5,
  Gather = 6,
  Scatter = 7,
};
constexpr int kNumCollKinds = 8;

// One buffer of a collective as one rank sees it: count elements, or count * nranks (one
// block per rank), held by every rank or by the root only (elsewhere it is never touched and
// may be NULL).
struct BufferShape {
  bool perRank;   // count * nranks elements
  bool rootOnly;  // only the root has this buffer

  size_t multiplier(int nranks) const { return perRank ? (size_t)nranks : 1; }
  bool heldBy(int rank, int root) const { return !rootOnly || rank == root; }
  // Elements of this buffer on rank (0 where the rank has none).
  size_t elements(size_t count, int rank, int nranks, int root) const {
    return heldBy(rank, root) ? count * multiplier(nranks) : 0;
  }
};

// Everything about a kind that does not depend on one call's arguments.
struct CollKindSpec {
  CollKind kind;
  const char* apiName;  // "mixcclAllReduce": the entry point, as messages name it
  const char* name;     // "allreduce": logs
  bool reduces;         // takes a reduction op
  bool rooted;          // takes a root
  bool pairwise;        // blocks move between pairs of ranks unchanged: point to point composes it
  BufferShape send;
  BufferShape recv;
};

const CollKindSpec& collSpec(CollKind kind);

// Kinds read from outside (another rank's descriptor): true and *kind set when value names one.
bool collKindFromInt(int32_t value, CollKind* kind);

}  // namespace mixccl
