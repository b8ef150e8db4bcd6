// Which tensors of a coalesced call share one packed mixccl call, and the size bound that
// decides it (MIXCCL_TORCH_PACK_BYTES). A plan sees sizes and kinds only, so every rank, given
// the same tensor sizes and kinds in the same order (as any collective requires), plans the
// same calls.
#pragma once

#include <cstddef>
#include <vector>

namespace mixccl_torch {

// Below this many bytes (the whole buffer the call moves) a tensor's own mixccl call costs more
// than copying it into and out of a packed buffer: every call pays its argument checks, its
// call stamp and the hand-off to the progress thread, and each step of its algorithm a round
// trip between the ranks. Measured with perf/torch_bench.py --ops all_reduce_coalesced over
// sockets, 2 ranks (docs/pytorch.md, "Coalesced calls"): 64 tensors of 1-64 KiB ran 2.7-14.5x
// faster packed, 16 of 128 KiB 0.56x and 4 of 16 MiB 0.39x (the two copies cost more than the
// calls they save). Over shared memory, where a small call is cheap, packing measured slower in
// most cases (docs/pytorch.md); the bound applies on every transport all the same.
constexpr size_t kDefaultPackBelowBytes = size_t(128) << 10;

// MIXCCL_TORCH_PACK_BYTES: the bound in bytes (decimal, or with a K or M suffix); 0 packs
// nothing (one mixccl call per tensor). Unset or empty: kDefaultPackBelowBytes. Anything else
// throws "mixccl: MIXCCL_TORCH_PACK_BYTES=<value> is not a byte count ...".
size_t packBelowBytesFromEnv();

struct PackCandidate {
  size_t bytes;   // the whole buffer its call moves (an AllGather's output, a ReduceScatter's
                  // input, an AllReduce's tensor)
  int kind;       // tensors pack only with tensors of the same kind (their dtype for reductions)
  bool eligible;  // false: always a call of its own
};

struct PackPlan {
  std::vector<std::vector<size_t>> packed;  // each two or more indices, in list order
  std::vector<size_t> alone;                // one call each, in list order
};

// The eligible candidates below packBelowBytes, grouped by kind in order of first appearance;
// a group of one runs alone (packing it would only add copies).
PackPlan planPacking(const std::vector<PackCandidate>& candidates, size_t packBelowBytes);

}  // namespace mixccl_torch
