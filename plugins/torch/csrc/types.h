// How torch dtypes and reduce ops map onto mixccl's, and the argument checks shared by the
// backend's calls.
#pragma once

#include <mixccl.h>

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/Types.hpp>

#include <string>

namespace mixccl_torch {

// mixccl's datatype for a reduction on dtype; bool reduces as uint8 (see reductionFor).
// Throws naming the dtype when mixccl has none.
mixcclDataType_t mixcclTypeOf(at::ScalarType dtype, const char* opName);

// How one torch reduction runs.
struct Reduction {
  enum Kind { kNative, kPreMulSum, kBitwise } kind = kNative;
  mixcclRedOp_t op = mixcclSum;           // kNative
  double factor = 1.0;                    // kPreMulSum: the scalar every input is multiplied by
  c10d::ReduceOp::RedOpType bitwise = c10d::ReduceOp::BAND;  // kBitwise
};
// Checks that op applies to dtype (clear error otherwise) and picks the way to run it.
// bool: SUM/MAX/BOR are logical or (uint8 max), PRODUCT/MIN/BAND logical and (uint8 min).
// BAND/BOR/BXOR on integers gather every rank's input and fold locally (mixccl has no bitwise
// reductions). AVG on bool, bitwise ops on floating types: refused as torch's reference does.
Reduction reductionFor(const c10d::ReduceOp& op, at::ScalarType dtype, const char* opName);

// The one tensor of a single-tensor call; throws "mixccl <op>: expects one tensor, got N".
const at::Tensor& onlyTensor(const std::vector<at::Tensor>& tensors, const char* opName);
// Throws unless t has dtype and numel.
void checkMatches(const at::Tensor& t, at::ScalarType dtype, int64_t numel, const char* opName,
                  const char* what);

}  // namespace mixccl_torch
