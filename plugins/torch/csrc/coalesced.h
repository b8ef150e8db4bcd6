// allreduce_coalesced, which torch's _coalescing_manager and all_reduce_coalesced call with a
// list of tensors: small tensors of one dtype are packed into one buffer and all-reduced in one
// mixccl call; large ones run one call each.
#pragma once

#include "comm.h"
#include "types.h"

#include <ATen/ATen.h>

#include <vector>

namespace mixccl_torch {

// hows[i] is tensors[i]'s reduction (the same op for all; it differs by dtype only). Runs on the
// worker thread; every rank must pass tensors of the same dtypes and sizes in the same order, as
// for any collective, so every rank issues the same mixccl calls.
void runAllreduceCoalesced(Comm& comm, const std::vector<at::Tensor>& tensors,
                           const std::vector<Reduction>& hows);

}  // namespace mixccl_torch
