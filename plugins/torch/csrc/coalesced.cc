#include "coalesced.h"

#include "collectives.h"

#include <cstddef>

namespace mixccl_torch {

namespace {

// Below this size a tensor's own mixccl call costs more than copying it into and out of a
// packed buffer: every call pays its argument checks, its call stamp and the hand-off to the
// progress thread, and each step of its algorithm a round trip between the ranks. Measured with
// perf/torch_bench.py --ops all_reduce_coalesced over sockets, 2 ranks (docs/pytorch.md,
// "Coalesced calls"): 64 tensors of 1-64 KiB ran 2.7-14.5x faster packed, 16 of 128 KiB 0.56x
// and 4 of 16 MiB 0.39x (the two copies cost more than the calls they save; 4 of 1 MiB 1.12x,
// within the noise).
constexpr size_t kPackBelowBytes = size_t(128) << 10;

bool packable(const at::Tensor& t, const Reduction& how) {
  // Bitwise reductions gather every rank's input instead of reducing: no call to save.
  return !t.is_sparse() && how.kind != Reduction::kBitwise && t.nbytes() < kPackBelowBytes;
}

// The indices of the tensors that share one packed call: same dtype and device, in list order.
std::vector<std::vector<size_t>> packGroups(const std::vector<at::Tensor>& tensors,
                                            const std::vector<Reduction>& hows,
                                            std::vector<size_t>* alone) {
  std::vector<std::vector<size_t>> groups;
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (!packable(tensors[i], hows[i])) {
      alone->push_back(i);
      continue;
    }
    std::vector<size_t>* group = nullptr;
    for (std::vector<size_t>& g : groups) {
      const at::Tensor& first = tensors[g.front()];
      if (first.scalar_type() == tensors[i].scalar_type() &&
          first.device() == tensors[i].device()) {
        group = &g;
        break;
      }
    }
    if (group) group->push_back(i);
    else groups.push_back({i});
  }
  return groups;
}

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
                           const std::vector<Reduction>& hows) {
  std::vector<size_t> alone;
  for (const std::vector<size_t>& group : packGroups(tensors, hows, &alone)) {
    if (group.size() == 1) alone.push_back(group.front());
    else runPacked(comm, tensors, group, hows[group.front()]);
  }
  for (size_t i : alone) runAllreduce(comm, tensors[i], hows[i]);
}

}  // namespace mixccl_torch
