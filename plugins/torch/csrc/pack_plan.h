// Which tensors of a coalesced call share one packed mixccl call, and the size bound that
// decides it (MIXCCL_TORCH_PACK_BYTES). A plan sees sizes and kinds only, so every rank, given
// the same tensor sizes and kinds in the same order (as any collective requires), plans the
// same calls.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace mixccl_torch {

// Below this many bytes (the whole buffer the call moves) a tensor's own mixccl call costs more
// than copying it into and out of a packed buffer, where calls are dear: over sockets every
// call pays its argument checks, its call stamp, the hand-off to the progress thread and a round
// trip between the ranks per step of its algorithm. Measured with perf/torch_pack_ab.py
// (docs/pytorch.md, "Coalesced calls"; 3 interleaved rounds, 2 and 4 ranks, 64 tensors): over
// sockets packing was 1.10-3.60x faster at 1-16 KiB per tensor in every cell, 0.44-1.02x at 64
// KiB, so the bound lies between.
constexpr size_t kDefaultPackBelowBytes = size_t(64) << 10;

// MIXCCL_TORCH_PACK_BYTES as set: the bound in bytes (decimal, or with a K or M suffix); 0 packs
// nothing (one mixccl call per tensor). Unset or empty: nullopt (packBoundFor chooses). Anything
// else throws "mixccl: MIXCCL_TORCH_PACK_BYTES=<value> is not a byte count ...".
std::optional<size_t> packBelowBytesSetting();

struct PackBound {
  size_t bytes;     // coalesced calls pack their tensors below it; 0: never
  std::string why;  // what decided it, for the backend's pack_why
};

// The bound of one group's communicator: the setting where there is one. Otherwise none where
// the communicator's small collectives run on shared-memory slots (shmSlotBytes > 0: one host,
// every pair on shared memory), where packing measured slower in every cell (0.28-0.85x);
// kDefaultPackBelowBytes elsewhere. shmSlotBytes is agreed over the communicator's
// ranks at init, so every rank of a group chooses alike and their calls match.
PackBound packBoundFor(const std::optional<size_t>& setting, size_t shmSlotBytes);

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
