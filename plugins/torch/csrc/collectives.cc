#include "collectives.h"

#include <c10/util/Exception.h>

#include <cstring>

namespace mixccl_torch {

namespace {

// Rank r's bytes of every rank, as rows of a [size, numel] tensor of input's dtype.
at::Tensor gatherRows(Comm& comm, const HostBuffer& in) {
  at::Tensor rows = at::empty({comm.size(), static_cast<int64_t>(in.numel())},
                              in.host().options());
  comm.check(mixcclAllGather(in.data(), rows.data_ptr(), in.bytes(), mixcclUint8, comm.get(),
                             nullptr),
             "allgather");
  return rows;
}

// mixccl has no bitwise reductions: every rank folds all ranks' inputs the same way.
at::Tensor bitwiseReduce(Comm& comm, const HostBuffer& in, c10d::ReduceOp::RedOpType op) {
  at::Tensor rows = gatherRows(comm, in);
  at::Tensor acc = rows[0].clone();
  for (int r = 1; r < comm.size(); ++r) {
    if (op == c10d::ReduceOp::BAND) acc.bitwise_and_(rows[r]);
    else if (op == c10d::ReduceOp::BOR) acc.bitwise_or_(rows[r]);
    else acc.bitwise_xor_(rows[r]);
  }
  return acc;
}

void allreduceInPlace(Comm& comm, HostBuffer& buf, const Reduction& how) {
  at::ScalarType dtype = buf.host().scalar_type();
  mixcclDataType_t type = mixcclTypeOf(dtype, "allreduce");
  if (how.kind == Reduction::kBitwise) {
    buf.host().view({-1}).copy_(bitwiseReduce(comm, buf, how.bitwise));
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
                                     nullptr);
  if (how.kind == Reduction::kPreMulSum) mixcclRedOpDestroy(op, comm.get());
  comm.check(r, "allreduce");
}

}  // namespace

void runAllreduce(Comm& comm, const at::Tensor& tensor, const Reduction& how) {
  HostBuffer buf(tensor, true);
  allreduceInPlace(comm, buf, how);
  buf.writeBack();
}

void runBroadcast(Comm& comm, const at::Tensor& tensor, int root) {
  HostBuffer buf(tensor, true);
  comm.check(mixcclBroadcast(buf.data(), buf.data(), buf.bytes(), mixcclUint8, root, comm.get(),
                             nullptr),
             "broadcast");
  if (comm.rank() != root) buf.writeBack();
}

void runReduce(Comm& comm, const at::Tensor& tensor, const Reduction& how, int root) {
  HostBuffer buf(tensor, true);
  if (how.kind != Reduction::kNative) {
    // Bitwise and pre-multiplied reductions reuse the AllReduce path; only root keeps it.
    allreduceInPlace(comm, buf, how);
  } else {
    mixcclDataType_t type = mixcclTypeOf(buf.host().scalar_type(), "reduce");
    comm.check(mixcclReduce(buf.data(), buf.data(), buf.numel(), type, how.op, root, comm.get(),
                            nullptr),
               "reduce");
  }
  if (comm.rank() == root) buf.writeBack();
}

void runAllgather(Comm& comm, const at::Tensor& output, const at::Tensor& input) {
  HostBuffer in(input, true);
  HostBuffer out(output, false);
  comm.check(mixcclAllGather(in.data(), out.data(), in.bytes(), mixcclUint8, comm.get(), nullptr),
             "allgather");
  out.writeBack();
}

void runGather(Comm& comm, const at::Tensor& output, const at::Tensor& input, int root) {
  HostBuffer in(input, true);
  bool isRoot = comm.rank() == root;
  std::unique_ptr<HostBuffer> out;
  if (isRoot) out = std::make_unique<HostBuffer>(output, false);
  comm.check(mixcclGather(in.data(), isRoot ? out->data() : nullptr, in.bytes(), mixcclUint8,
                          root, comm.get(), nullptr),
             "gather");
  if (isRoot) out->writeBack();
}

void runScatter(Comm& comm, const at::Tensor& output, const at::Tensor& input, int root) {
  HostBuffer out(output, false);
  bool isRoot = comm.rank() == root;
  std::unique_ptr<HostBuffer> in;
  if (isRoot) in = std::make_unique<HostBuffer>(input, true);
  comm.check(mixcclScatter(isRoot ? in->data() : nullptr, out.data(), out.bytes(), mixcclUint8,
                           root, comm.get(), nullptr),
             "scatter");
  out.writeBack();
}

void runReduceScatter(Comm& comm, const at::Tensor& output, const at::Tensor& input,
                      const Reduction& how) {
  HostBuffer out(output, false);
  if (how.kind != Reduction::kNative) {
    HostBuffer whole(input, true);
    allreduceInPlace(comm, whole, how);
    int64_t n = static_cast<int64_t>(out.numel());
    out.host().view({-1}).copy_(whole.host().view({-1}).narrow(0, comm.rank() * n, n));
  } else {
    HostBuffer in(input, true);
    mixcclDataType_t type = mixcclTypeOf(in.host().scalar_type(), "reduce_scatter");
    comm.check(mixcclReduceScatter(in.data(), out.data(), out.numel(), type, how.op, comm.get(),
                                   nullptr),
               "reduce_scatter");
  }
  out.writeBack();
}

void runAlltoallv(Comm& comm, const at::Tensor& output, const at::Tensor& input,
                  const std::vector<int64_t>& sendCounts, const std::vector<int64_t>& recvCounts) {
  HostBuffer in(input, true);
  HostBuffer out(output, false);
  const size_t elem = in.host().element_size();
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
      std::memcpy(dst + recvOff, src + sendOff, sendBytes);  // equal: checked by the caller
    } else if (sendBytes) r = mixcclSend(src + sendOff, sendBytes, mixcclUint8, peer, comm.get(), nullptr);
    if (r == mixcclSuccess && recvBytes && peer != comm.rank())
      r = mixcclRecv(dst + recvOff, recvBytes, mixcclUint8, peer, comm.get(), nullptr);
    sendOff += sendBytes;
    recvOff += recvBytes;
  }
  mixcclResult_t end = mixcclGroupEnd();
  comm.check(r != mixcclSuccess ? r : end, "alltoall");
  out.writeBack();
}

void runAlltoallList(Comm& comm, const std::vector<at::Tensor>& outputs,
                     const std::vector<at::Tensor>& inputs) {
  std::vector<std::unique_ptr<HostBuffer>> ins, outs;
  for (const at::Tensor& t : inputs) ins.push_back(std::make_unique<HostBuffer>(t, true));
  for (const at::Tensor& t : outputs) outs.push_back(std::make_unique<HostBuffer>(t, false));
  comm.check(mixcclGroupStart(), "alltoall");
  mixcclResult_t r = mixcclSuccess;
  for (int peer = 0; peer < comm.size() && r == mixcclSuccess; ++peer) {
    if (peer == comm.rank()) {
      std::memcpy(outs[peer]->data(), ins[peer]->data(), ins[peer]->bytes());
      continue;
    }
    if (ins[peer]->bytes())
      r = mixcclSend(ins[peer]->data(), ins[peer]->bytes(), mixcclUint8, peer, comm.get(), nullptr);
    if (r == mixcclSuccess && outs[peer]->bytes())
      r = mixcclRecv(outs[peer]->data(), outs[peer]->bytes(), mixcclUint8, peer, comm.get(),
                     nullptr);
  }
  mixcclResult_t end = mixcclGroupEnd();
  comm.check(r != mixcclSuccess ? r : end, "alltoall");
  for (auto& out : outs) out->writeBack();
}

void runBarrier(Comm& comm) {
  uint8_t token = 0;
  comm.check(mixcclAllReduce(&token, &token, 1, mixcclUint8, mixcclMax, comm.get(), nullptr),
             "barrier");
}

}  // namespace mixccl_torch
