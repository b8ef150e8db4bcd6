#include "comm_buffer.h"

namespace mixccl_torch {

CommBuffer::CommBuffer(const Comm& comm, const at::Tensor& tensor, bool copyIn)
    : original_(tensor) {
  const c10::Device where = comm.bufferDevice();
  copied_ = !(tensor.device() == where && tensor.is_contiguous());
  if (!copied_) {
    buffer_ = tensor;
    return;
  }
  // Pinned host memory for a CUDA tensor: torch's caching host allocator reuses its blocks from
  // call to call, and copies to and from it run asynchronously on the stream.
  buffer_ = at::empty(tensor.sizes(), tensor.options().device(where).pinned_memory(
                                          where.is_cpu() && tensor.is_cuda()));
  // Blocking: a copy to the host waits for the stream it runs on (for a CUDA tensor the
  // internal stream, which waited for the caller's stream), so the host reads a ready tensor.
  if (copyIn) buffer_.copy_(tensor);
}

void CommBuffer::writeBack() {
  if (!copied_) return;
  // Into a CUDA tensor: on the stream, without blocking (the end event is recorded after it;
  // the caching host allocator keeps a pinned source until the copy is done). Into a CPU
  // tensor: blocking, so that the result is there when the Work completes.
  original_.copy_(buffer_, /*non_blocking=*/original_.is_cuda());
}

}  // namespace mixccl_torch
