// The coalesced collectives (a list of tensors in one torch call: all_reduce_coalesced,
// _coalescing_manager, all_gather_into_tensor / reduce_scatter_tensor coalesced,
// all_gather_coalesced): the tensors the pack plan (pack_plan.h) groups are packed into one
// buffer and run as one mixccl call; the others run one call each.
#pragma once

#include "comm.h"
#include "types.h"

#include <ATen/ATen.h>

#include <cstddef>
#include <vector>

namespace mixccl_torch {

// All run on the worker thread, on arguments checked on the caller's thread. Every rank must
// pass tensors of the same dtypes and sizes in the same order, as for any collective, so every
// rank issues the same mixccl calls. packBelowBytes: the pack plan's bound (0: no packing).

// hows[i] is tensors[i]'s reduction (the same op for all; it differs by dtype only).
void runAllreduceCoalesced(Comm& comm, const std::vector<at::Tensor>& tensors,
                           const std::vector<Reduction>& hows, size_t packBelowBytes);
// outputs[i] receives every rank's inputs[i] in rank order (size x inputs[i].numel()).
void runAllgatherIntoTensorCoalesced(Comm& comm, const std::vector<at::Tensor>& outputs,
                                     const std::vector<at::Tensor>& inputs,
                                     size_t packBelowBytes);
// outputs[r][i] receives rank r's inputs[i].
void runAllgatherCoalesced(Comm& comm, const std::vector<std::vector<at::Tensor>>& outputs,
                           const std::vector<at::Tensor>& inputs, size_t packBelowBytes);
// outputs[i] receives block `rank` of the reduction of inputs[i] (size x outputs[i].numel()).
void runReduceScatterCoalesced(Comm& comm, const std::vector<at::Tensor>& outputs,
                               const std::vector<at::Tensor>& inputs,
                               const std::vector<Reduction>& hows, size_t packBelowBytes);

}  // namespace mixccl_torch
