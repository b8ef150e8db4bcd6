// Coalesced all_reduce: the small tensors of each dtype packed into one buffer, one mixccl
// AllReduce on it, the results copied back.
#include "coalesced.h"

#include "collectives.h"
#include "pack_plan.h"

namespace mixccl_torch {

namespace {

void runPacked(Comm& comm, const std::vector<at::Tensor>& tensors, const std::vector<size_t>& group,
               const Reduction& how) {
  std::vector<at::Tensor> flat;
  flat.reserve(group.size());
  // Packed where the operation's buffers live (the GPU on a device adaptor), so the packed
  // tensor needs no further copy.
  for (size_t i : group) flat.push_back(tensors[i].to(comm.bufferDevice()).reshape({-1}));
  at::Tensor packed = at::cat(flat);
  runAllreduce(comm, packed, how);
  int64_t offset = 0;
  for (size_t i : group) {
    const at::Tensor& t = tensors[i];
    t.copy_(packed.narrow(0, offset, t.numel()).view(t.sizes()));
    offset += t.numel();
  }
}

}  // namespace

void runAllreduceCoalesced(Comm& comm, const std::vector<at::Tensor>& tensors,
                           const std::vector<Reduction>& hows, size_t packBelowBytes) {
  std::vector<PackCandidate> candidates;
  for (size_t i = 0; i < tensors.size(); ++i) {
    // Bitwise reductions gather every rank's input instead of reducing (collectives.cc); a
    // sparse tensor has no flat buffer to pack.
    const at::Tensor& t = tensors[i];
    bool eligible = !t.is_sparse() && hows[i].kind != Reduction::kBitwise;
    candidates.push_back({eligible ? t.nbytes() : 0, static_cast<int>(t.scalar_type()), eligible});
  }
  PackPlan plan = planPacking(candidates, packBelowBytes);
  for (const std::vector<size_t>& group : plan.packed)
    runPacked(comm, tensors, group, hows[group.front()]);
  for (size_t i : plan.alone) runAllreduce(comm, tensors[i], hows[i]);
}

}  // namespace mixccl_torch
