// Coalesced all_gather: a gather moves bytes, so the small inputs of every dtype are packed
// side by side into one byte buffer, gathered by one mixccl AllGather into a [size, bytes]
// buffer (row r: rank r's packed inputs), and each tensor's columns copied out to its outputs.
#include "coalesced.h"

#include "collectives.h"
#include "pack_plan.h"

namespace mixccl_torch {

namespace {

// A tensor's elements in order as flat bytes, on device (a view where it already is a
// contiguous tensor there).
at::Tensor bytesOn(const at::Tensor& t, c10::Device device) {
  return t.to(device).contiguous().reshape({-1}).view(at::kByte);
}

// Writes src (bytes, any layout, as many as dst holds) into dst, whatever dst's layout, dtype
// and device: through a contiguous copy where dst is not contiguous.
void copyBytesInto(const at::Tensor& dst, const at::Tensor& src) {
  at::Tensor dense = dst.is_contiguous() ? dst : at::empty_like(dst, at::MemoryFormat::Contiguous);
  dense.reshape({-1}).view(at::kByte).view(src.sizes()).copy_(src);
  if (!dense.is_same(dst)) dst.copy_(dense);
}

// One AllGather of the group's inputs: returns the [size, total bytes] rows; (*offsets)[k] is
// where group[k]'s bytes start in a row.
at::Tensor gatherPacked(Comm& comm, const std::vector<at::Tensor>& inputs,
                        const std::vector<size_t>& group, std::vector<int64_t>* offsets) {
  std::vector<at::Tensor> flat;
  int64_t total = 0;
  for (size_t i : group) {
    flat.push_back(bytesOn(inputs[i], comm.bufferDevice()));
    offsets->push_back(total);
    total += flat.back().numel();
  }
  at::Tensor packed = at::cat(flat);
  at::Tensor rows = at::empty({comm.size(), total}, packed.options());
  runAllgather(comm, rows, packed);
  return rows;
}

PackPlan planGathers(const std::vector<at::Tensor>& inputs, int size, size_t packBelowBytes) {
  std::vector<PackCandidate> candidates;
  // Every dtype packs with every other: the call moves bytes (kind 0 for all).
  for (const at::Tensor& t : inputs) {
    if (t.is_sparse()) candidates.push_back({0, 0, false});
    else candidates.push_back({t.nbytes() * static_cast<size_t>(size), 0, true});
  }
  return planPacking(candidates, packBelowBytes);
}

}  // namespace

void runAllgatherIntoTensorCoalesced(Comm& comm, const std::vector<at::Tensor>& outputs,
                                     const std::vector<at::Tensor>& inputs,
                                     size_t packBelowBytes) {
  PackPlan plan = planGathers(inputs, comm.size(), packBelowBytes);
  for (const std::vector<size_t>& group : plan.packed) {
    std::vector<int64_t> offsets;
    at::Tensor rows = gatherPacked(comm, inputs, group, &offsets);
    for (size_t k = 0; k < group.size(); ++k) {
      int64_t bytes = static_cast<int64_t>(inputs[group[k]].nbytes());
      copyBytesInto(outputs[group[k]], rows.narrow(1, offsets[k], bytes));
    }
  }
  for (size_t i : plan.alone) runAllgather(comm, outputs[i], inputs[i]);
}

void runAllgatherCoalesced(Comm& comm, const std::vector<std::vector<at::Tensor>>& outputs,
                           const std::vector<at::Tensor>& inputs, size_t packBelowBytes) {
  PackPlan plan = planGathers(inputs, comm.size(), packBelowBytes);
  for (const std::vector<size_t>& group : plan.packed) {
    std::vector<int64_t> offsets;
    at::Tensor rows = gatherPacked(comm, inputs, group, &offsets);
    for (size_t k = 0; k < group.size(); ++k) {
      int64_t bytes = static_cast<int64_t>(inputs[group[k]].nbytes());
      for (int r = 0; r < comm.size(); ++r)
        copyBytesInto(outputs[r][group[k]], rows[r].narrow(0, offsets[k], bytes));
    }
  }
  for (size_t i : plan.alone) {
    at::Tensor flat = at::empty({inputs[i].numel() * comm.size()},
                                inputs[i].options().device(comm.bufferDevice()));
    runAllgather(comm, flat, inputs[i]);
    int64_t n = inputs[i].numel();
    for (int r = 0; r < comm.size(); ++r)
      outputs[r][i].copy_(flat.narrow(0, r * n, n).view(outputs[r][i].sizes()));
  }
}

}  // namespace mixccl_torch
