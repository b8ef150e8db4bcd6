// How torch dtypes and reduce ops map onto mixccl's, and where a tensor's bytes live while
// mixccl works on them.
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

// A tensor's data as one contiguous CPU buffer: the tensor itself when it already is one,
// otherwise a copy (non-contiguous or CUDA tensors) that writeBack() copies into the original.
class HostBuffer {
 public:
  // copyIn: whether the current values are needed (inputs and in-place outputs).
  HostBuffer(const at::Tensor& tensor, bool copyIn);
  void* data() const { return host_.data_ptr(); }
  size_t bytes() const { return host_.nbytes(); }
  size_t numel() const { return static_cast<size_t>(host_.numel()); }
  const at::Tensor& host() const { return host_; }
  void writeBack();

 private:
  at::Tensor original_;
  at::Tensor host_;
  bool copied_;
};

// The one tensor of a single-tensor call; throws "mixccl <op>: expects one tensor, got N".
const at::Tensor& onlyTensor(const std::vector<at::Tensor>& tensors, const char* opName);
// Throws unless t has dtype and numel.
void checkMatches(const at::Tensor& t, at::ScalarType dtype, int64_t numel, const char* opName,
                  const char* what);

}  // namespace mixccl_torch
