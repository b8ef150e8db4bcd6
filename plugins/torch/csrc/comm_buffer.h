// A tensor's data as one contiguous buffer where the operation's mixccl buffers live
// (Comm::bufferDevice(): host memory, or the CUDA device on a device adaptor).
#pragma once

#include "comm.h"

#include <ATen/ATen.h>

namespace mixccl_torch {

// The tensor itself when it already is such a buffer; otherwise a copy that writeBack() copies
// into the original: a non-contiguous tensor, a CUDA tensor on a host adaptor (through pinned
// host memory), a CPU tensor on a device adaptor. Copies run on the worker's current stream,
// which for CUDA tensors is the internal stream (op_order.h).
class CommBuffer {
 public:
  // copyIn: whether the current values are needed (inputs and in-place outputs).
  CommBuffer(const Comm& comm, const at::Tensor& tensor, bool copyIn);
  void* data() const { return buffer_.data_ptr(); }
  size_t bytes() const { return buffer_.nbytes(); }
  size_t numel() const { return static_cast<size_t>(buffer_.numel()); }
  // The contiguous buffer (the tensor itself or its copy).
  const at::Tensor& tensor() const { return buffer_; }
  void writeBack();

 private:
  at::Tensor original_;
  at::Tensor buffer_;
  bool copied_;
};

}  // namespace mixccl_torch
