// Coalesced reduce_scatter: the small tensors of each dtype packed into one [size, total]
// buffer whose row r holds every tensor's block r side by side, one mixccl ReduceScatter on it
// (this rank gets the reduced row `rank`: its block of every tensor), the blocks copied out.
#include "coalesced.h"

#include "collectives.h"
#include "pack_plan.h"

namespace mixccl_torch {

namespace {

void runPacked(Comm& comm, const std::vector<at::Tensor>& outputs,
               const std::vector<at::Tensor>& inputs, const std::vector<size_t>& group,
               const Reduction& how) {
  std::vector<at::Tensor> blocks;
  int64_t total = 0;
  for (size_t i : group) {
    // inputs[i] holds size x outputs[i].numel() elements: as rows, block r is row r.
    blocks.push_back(inputs[i].to(comm.bufferDevice()).reshape({comm.size(), outputs[i].numel()}));
    total += outputs[i].numel();
  }
  at::Tensor packed = at::cat(blocks, 1);
  at::Tensor mine = at::empty({total}, packed.options());
  runReduceScatter(comm, mine, packed, how);
  int64_t offset = 0;
  for (size_t i : group) {
    const at::Tensor& out = outputs[i];
    out.copy_(mine.narrow(0, offset, out.numel()).view(out.sizes()));
    offset += out.numel();
  }
}

}  // namespace

void runReduceScatterCoalesced(Comm& comm, const std::vector<at::Tensor>& outputs,
                               const std::vector<at::Tensor>& inputs,
                               const std::vector<Reduction>& hows, size_t packBelowBytes) {
  std::vector<PackCandidate> candidates;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const at::Tensor& in = inputs[i];
    // Bitwise reductions gather every rank's whole input instead of reducing (collectives.cc),
    // as all_reduce's do, which packs them neither.
    bool eligible = !in.is_sparse() && hows[i].kind != Reduction::kBitwise;
    candidates.push_back({eligible ? in.nbytes() : 0, static_cast<int>(in.scalar_type()),
                          eligible});
  }
  PackPlan plan = planPacking(candidates, packBelowBytes);
  for (const std::vector<size_t>& group : plan.packed)
    runPacked(comm, outputs, inputs, group, hows[group.front()]);
  for (size_t i : plan.alone) runReduceScatter(comm, outputs[i], inputs[i], hows[i]);
}

}  // namespace mixccl_torch
