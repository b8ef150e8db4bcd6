#include "collectives.h"

#include "comm_buffer.h"

#include <c10/util/Exception.h>

namespace mixccl_torch {

namespace {

// A contiguous buffer's bytes as a flat uint8 tensor (same memory).
at::Tensor bytesOf(const CommBuffer& buf) {
  return at::from_blob(buf.data(), {static_cast<int64_t>(buf.bytes())},
                       buf.tensor().options().dtype(at::kByte));
}

// Rank r's bytes of every rank, as rows of a [size, numel] tensor of input's dtype.
at::Tensor gatherRows(Comm& comm, const CommBuffer& in) {
  at::Tensor rows = at::empty({comm.size(), static_cast<int64_t>(in.numel())},
                              in.tensor().options());
  comm.checkCollective(mixcclAllGather(in.data(), rows.data_ptr(), in.bytes(), mixcclUint8,
                                       comm.get(), comm.stream()),
                       "allgather");
  return rows;
}

// mixccl has no bitwise reductions: every rank folds all ranks' inputs the same way.
at::Tensor bitwiseReduce(Comm& comm, const CommBuffer& in, c10d::ReduceOp::RedOpType op) {
  at::Tensor rows = gatherRows(comm, in);
  at::Tensor acc = rows[0].clone();
  for (int r = 1; r < comm.size(); ++r) {
    if (op == c10d::ReduceOp::BAND) acc.bitwise_and_(rows[r]);
    else if (op == c10d::ReduceOp::BOR) acc.bitwise_or_(rows[r]);
    else acc.bitwise_xor_(rows[r]);
  }
  return acc;
}

void allreduceInPlace(Comm& comm, CommBuffer& buf, const Reduction& how) {
  at::ScalarType dtype = buf.tensor().scalar_type();
  mixcclDataType_t type = mixcclTypeOf(dtype, "allreduce");
  if (how.kind == Reduction::kBitwise) {
    buf.tensor().view({-1}).copy_(bitwiseReduce(comm, buf, how.bitwise));
    return;
  }
  mixcclRedOp_t op = how.op;
  if (how.kind == Reduction::kPreMulSum) {
    at::Tensor scalar = at::scalar_tensor(how.factor, at::TensorOptions().dtype(dtype));
    comm.check(mixcclRedOpCreatePreMulSum(&op, scalar.data_ptr(), type,
                                          mixcclScalarHostImmediate, comm.get()),
               "PREMUL_SUM");
  }
  mixcclResult_t r = mixcclAllReduce(buf.data(), buf.data(), buf.numel(), type, op, comm.get(),
                                     comm.stream());
  if (how.kind == Reduction::kPreMulSum) mixcclRedOpDestroy(op, comm.get());
  comm.checkCollective(r, "allreduce");
}

}  // namespace

void runAllreduce(Comm& comm, const at::Tensor& tensor, const Reduction& how) {
  CommBuffer buf(comm, tensor, true);
  allreduceInPlace(comm, buf, how);
  buf.writeBack();
}

void runBroadcast(Comm& comm, const at::Tensor& tensor, int root) {
  CommBuffer buf(comm, tensor, true);
  comm.checkCollective(mixcclBroadcast(buf.data(), buf.data(), buf.bytes(), mixcclUint8, root,
                                       comm.get(), comm.stream()),
                       "broadcast");
  if (comm.rank() != root) buf.writeBack();
}

void runReduce(Comm& comm, const at::Tensor& tensor, const Reduction& how, int root) {
  CommBuffer buf(comm, tensor, true);
  if (how.kind != Reduction::kNative) {
    // Bitwise and pre-multiplied reductions reuse the AllReduce path; only root keeps it.
    allreduceInPlace(comm, buf, how);
  } else {
    mixcclDataType_t type = mixcclTypeOf(buf.tensor().scalar_type(), "reduce");
    comm.checkCollective(mixcclReduce(buf.data(), buf.data(), buf.numel(), type, how.op, root,
                                      comm.get(), comm.stream()),
                         "reduce");
  }
  if (comm.rank() == root) buf.writeBack();
}

void runAllgather(Comm& comm, const at::Tensor& output, const at::Tensor& input) {
  CommBuffer in(comm, input, true);
  CommBuffer out(comm, output, false);
  comm.checkCollective(mixcclAllGather(in.data(), out.data(), in.bytes(), mixcclUint8, comm.get(),
                                       comm.stream()),
                       "allgather");
  out.writeBack();
}

void runGather(Comm& comm, const at::Tensor& output, const at::Tensor& input, int root) {
  CommBuffer in(comm, input, true);
  bool isRoot = comm.rank() == root;
  std::unique_ptr<CommBuffer> out;
  if (isRoot) out = std::make_unique<CommBuffer>(comm, output, false);
  comm.checkCollective(mixcclGather(in.data(), isRoot ? out->data() : nullptr, in.bytes(),
                                    mixcclUint8, root, comm.get(), comm.stream()),
                       "gather");
  if (isRoot) out->writeBack();
}

void runScatter(Comm& comm, const at::Tensor& output, const at::Tensor& input, int root) {
  CommBuffer out(comm, output, false);
  bool isRoot = comm.rank() == root;
  std::unique_ptr<CommBuffer> in;
  if (isRoot) in = std::make_unique<CommBuffer>(comm, input, true);
  comm.checkCollective(mixcclScatter(isRoot ? in->data() : nullptr, out.data(), out.bytes(),
                                     mixcclUint8, root, comm.get(), comm.stream()),
                       "scatter");
  out.writeBack();
}

void runReduceScatter(Comm& comm, const at::Tensor& output, const at::Tensor& input,
                      const Reduction& how) {
  CommBuffer out(comm, output, false);
  if (how.kind != Reduction::kNative) {
    CommBuffer whole(comm, input, true);
    allreduceInPlace(comm, whole, how);
    int64_t n = static_cast<int64_t>(out.numel());
    out.tensor().view({-1}).copy_(whole.tensor().view({-1}).narrow(0, comm.rank() * n, n));
  } else {
    CommBuffer in(comm, input, true);
    mixcclDataType_t type = mixcclTypeOf(in.tensor().scalar_type(), "reduce_scatter");
    comm.checkCollective(mixcclReduceScatter(in.data(), out.data(), out.numel(), type, how.op,
                                             comm.get(), comm.stream()),
                         "reduce_scatter");
  }
  out.writeBack();
}

void runAlltoallv(Comm& comm, const at::Tensor& output, const at::Tensor& input,
                  const std::vector<int64_t>& sendCounts, const std::vector<int64_t>& recvCounts) {
  CommBuffer in(comm, input, true);
  CommBuffer out(comm, output, false);
  const size_t elem = in.tensor().element_size();
  const char* src = static_cast<const char*>(in.data());
  char* dst = static_cast<char*>(out.data());
  // All sends and receives of the exchange in one group: in flight together, no ordering
  // between peers to deadlock on.
  comm.check(mixcclGroupStart(), "alltoall");
  mixcclResult_t r = mixcclSuccess;
  size_t sendOff = 0, recvOff = 0;
  for (int peer = 0; peer < comm.size() && r == mixcclSuccess; ++peer) {
    size_t sendBytes = static_cast<size_t>(sendCounts[peer]) * elem;
    size_t recvBytes = static_cast<size_t>(recvCounts[peer]) * elem;
    if (peer == comm.rank()) {
      // Its own block (equal sizes: checked by the caller), by a tensor copy: on a device
      // adaptor the buffers are device memory, copied on the stream.
      bytesOf(out).narrow(0, recvOff, sendBytes).copy_(bytesOf(in).narrow(0, sendOff, sendBytes));
    } else if (sendBytes) r = mixcclSend(src + sendOff, sendBytes, mixcclUint8, peer, comm.get(), comm.stream());
    if (r == mixcclSuccess && recvBytes && peer != comm.rank())
      r = mixcclRecv(dst + recvOff, recvBytes, mixcclUint8, peer, comm.get(), comm.stream());
    sendOff += sendBytes;
    recvOff += recvBytes;
  }
  mixcclResult_t end = mixcclGroupEnd();
  comm.checkCollective(r != mixcclSuccess ? r : end, "alltoall");
  out.writeBack();
}

void runAlltoallList(Comm& comm, const std::vector<at::Tensor>& outputs,
                     const std::vector<at::Tensor>& inputs) {
  std::vector<std::unique_ptr<CommBuffer>> ins, outs;
  for (const at::Tensor& t : inputs) ins.push_back(std::make_unique<CommBuffer>(comm, t, true));
  for (const at::Tensor& t : outputs) outs.push_back(std::make_unique<CommBuffer>(comm, t, false));
  comm.check(mixcclGroupStart(), "alltoall");
  mixcclResult_t r = mixcclSuccess;
  for (int peer = 0; peer < comm.size() && r == mixcclSuccess; ++peer) {
    if (peer == comm.rank()) {
      outs[peer]->tensor().view({-1}).copy_(ins[peer]->tensor().view({-1}));
      continue;
    }
    if (ins[peer]->bytes())
      r = mixcclSend(ins[peer]->data(), ins[peer]->bytes(), mixcclUint8, peer, comm.get(), comm.stream());
    if (r == mixcclSuccess && outs[peer]->bytes())
      r = mixcclRecv(outs[peer]->data(), outs[peer]->bytes(), mixcclUint8, peer, comm.get(),
                     comm.stream());
  }
  mixcclResult_t end = mixcclGroupEnd();
  comm.checkCollective(r != mixcclSuccess ? r : end, "alltoall");
  for (auto& out : outs) out->writeBack();
}

void runBarrier(Comm& comm) {
  at::Tensor token = at::zeros({1}, at::TensorOptions().dtype(at::kByte).device(comm.bufferDevice()));
  comm.checkCollective(mixcclAllReduce(token.data_ptr(), token.data_ptr(), 1, mixcclUint8,
                                       mixcclMax, comm.get(), comm.stream()),
                       "barrier");
}

}  // namespace mixccl_torch
