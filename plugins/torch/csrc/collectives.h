// The mixccl calls behind each torch collective, run on the backend's worker thread. Inputs
// were checked on the caller's thread; these stage through CommBuffer where the tensor is not
// already a buffer of the operation's memory, and write results back.
#pragma once

#include "comm.h"
#include "types.h"

#include <ATen/ATen.h>

#include <vector>

namespace mixccl_torch {

void runAllreduce(Comm& comm, const at::Tensor& tensor, const Reduction& how);
// A sparse COO tensor on the CPU, summed in place (every rank gets the coalesced sum).
void runSparseAllreduce(Comm& comm, const at::Tensor& tensor);
void runBroadcast(Comm& comm, const at::Tensor& tensor, int root);
void runReduce(Comm& comm, const at::Tensor& tensor, const Reduction& how, int root);
// output holds size x input.numel() elements, rank r's input at r * input.numel().
void runAllgather(Comm& comm, const at::Tensor& output, const at::Tensor& input);
// output: at root, size x input.numel() elements; elsewhere undefined (not touched).
void runGather(Comm& comm, const at::Tensor& output, const at::Tensor& input, int root);
// input: at root, size x output.numel() elements; elsewhere undefined.
void runScatter(Comm& comm, const at::Tensor& output, const at::Tensor& input, int root);
// input holds size x output.numel() elements; this rank gets the reduction of block rank.
void runReduceScatter(Comm& comm, const at::Tensor& output, const at::Tensor& input,
                      const Reduction& how);
// Splits are element counts per peer (already resolved from torch's row splits).
void runAlltoallv(Comm& comm, const at::Tensor& output, const at::Tensor& input,
                  const std::vector<int64_t>& sendCounts, const std::vector<int64_t>& recvCounts);
void runAlltoallList(Comm& comm, const std::vector<at::Tensor>& outputs,
                     const std::vector<at::Tensor>& inputs);
void runBarrier(Comm& comm);

}  // namespace mixccl_torch
