// The collectives of MixcclBackend: argument checks on the caller's thread, then the mixccl
// call (collectives.cc) on the worker.
#include "backend.h"
#include "coalesced.h"
#include "collectives.h"

#include <c10/util/Exception.h>

namespace mixccl_torch {

namespace {

// Every output of a list has the input's dtype and size.
void checkList(const std::vector<at::Tensor>& list, const at::Tensor& like, size_t expected,
               const char* opName, const char* what) {
  TORCH_CHECK(list.size() == expected, "mixccl ", opName, ": ", what, " has ", list.size(),
              " tensors, expected ", expected, " (one per rank)");
  for (const at::Tensor& t : list) checkMatches(t, like.scalar_type(), like.numel(), opName, what);
}

// Flat [size * numel] staging of a per-rank tensor list, in rank order, on the device of the
// operation's buffers (Comm::bufferDevice).
at::Tensor stackFlat(const std::vector<at::Tensor>& list, c10::Device device) {
  std::vector<at::Tensor> flat;
  for (const at::Tensor& t : list) flat.push_back(t.to(device).reshape({-1}));
  return at::cat(flat);
}

void scatterFlat(const at::Tensor& flat, const std::vector<at::Tensor>& list) {
  int64_t n = list.empty() ? 0 : list[0].numel();
  for (size_t i = 0; i < list.size(); ++i)
    list[i].copy_(flat.narrow(0, static_cast<int64_t>(i) * n, n).view(list[i].sizes()));
}

}  // namespace

c10::intrusive_ptr<c10d::Work> MixcclBackend::broadcast(std::vector<at::Tensor>& tensors,
                                                        const c10d::BroadcastOptions& opts) {
  at::Tensor t = onlyTensor(tensors, "broadcast");
  checkRoot(static_cast<int>(opts.rootRank), "broadcast");
  int root = static_cast<int>(opts.rootRank);
  return enqueue(c10d::OpType::BROADCAST, "broadcast", tensors, timeoutOr(opts.timeout),
                 [t, root](Comm& comm) { runBroadcast(comm, t, root); });
}

c10::intrusive_ptr<c10d::Work> MixcclBackend::allreduce(std::vector<at::Tensor>& tensors,
                                                        const c10d::AllreduceOptions& opts) {
  at::Tensor t = onlyTensor(tensors, "allreduce");
  if (t.is_sparse()) {
    TORCH_CHECK(opts.reduceOp == c10d::ReduceOp::SUM, "mixccl allreduce: a sparse tensor "
                "reduces with SUM only (as gloo's)");
    TORCH_CHECK(t.device().is_cpu(), "mixccl allreduce: sparse tensors on ", t.device(),
                " are not supported (CPU only)");
    return enqueue(c10d::OpType::ALLREDUCE, "allreduce", tensors, timeoutOr(opts.timeout),
                   [t](Comm& comm) { runSparseAllreduce(comm, t); });
  }
  Reduction how = reductionFor(opts.reduceOp, t.scalar_type(), "allreduce");
  return enqueue(c10d::OpType::ALLREDUCE, "allreduce", tensors, timeoutOr(opts.timeout),
                 [t, how](Comm& comm) { runAllreduce(comm, t, how); });
}

c10::intrusive_ptr<c10d::Work> MixcclBackend::allreduce_coalesced(
    std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) {
  TORCH_CHECK(!tensors.empty(), "mixccl allreduce_coalesced: no tensors");
  std::vector<Reduction> hows;
  for (const at::Tensor& t : tensors)
    hows.push_back(reductionFor(opts.reduceOp, t.scalar_type(), "allreduce_coalesced"));
  std::vector<at::Tensor> ts = tensors;
  size_t packBelow = pack_.bytes;
  return enqueue(c10d::OpType::ALLREDUCE_COALESCED, "allreduce_coalesced", tensors,
                 timeoutOr(opts.timeout), [ts, hows, packBelow](Comm& comm) {
                   runAllreduceCoalesced(comm, ts, hows, packBelow);
                 });
}

c10::intrusive_ptr<c10d::Work> MixcclBackend::reduce(std::vector<at::Tensor>& tensors,
                                                     const c10d::ReduceOptions& opts) {
  at::Tensor t = onlyTensor(tensors, "reduce");
  checkRoot(static_cast<int>(opts.rootRank), "reduce");
  Reduction how = reductionFor(opts.reduceOp, t.scalar_type(), "reduce");
  int root = static_cast<int>(opts.rootRank);
  return enqueue(c10d::OpType::REDUCE, "reduce", tensors, timeoutOr(opts.timeout),
                 [t, how, root](Comm& comm) { runReduce(comm, t, how, root); });
}

c10::intrusive_ptr<c10d::Work> MixcclBackend::allgather(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions& opts) {
  at::Tensor in = onlyTensor(inputs, "allgather");
  TORCH_CHECK(outputs.size() == 1, "mixccl allgather: expects one output list, got ",
              outputs.size());
  std::vector<at::Tensor> outs = outputs[0];
  checkList(outs, in, static_cast<size_t>(size_), "allgather", "an output");
  return enqueue(c10d::OpType::ALLGATHER, "allgather", outs, timeoutOr(opts.timeout),
                 [in, outs](Comm& comm) {
                   at::Tensor flat = at::empty({in.numel() * comm.size()},
                                               in.options().device(comm.bufferDevice()));
                   runAllgather(comm, flat, in);
                   scatterFlat(flat, outs);
                 }, {in});
}

c10::intrusive_ptr<c10d::Work> MixcclBackend::_allgather_base(at::Tensor& output,
                                                              at::Tensor& input,
                                                              const c10d::AllgatherOptions& opts) {
  checkMatches(output, input.scalar_type(), input.numel() * size_, "all_gather_into_tensor",
               "the output");
  at::Tensor out = output, in = input;
  return enqueue(c10d::OpType::_ALLGATHER_BASE, "all_gather_into_tensor", {output},
                 timeoutOr(opts.timeout),
                 [out, in](Comm& comm) { runAllgather(comm, out, in); }, {input});
}

c10::intrusive_ptr<c10d::Work> MixcclBackend::allgather_coalesced(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions& opts) {
  // outputs[r][i] receives rank r's inputs[i].
  TORCH_CHECK(outputs.size() == static_cast<size_t>(size_), "mixccl allgather_coalesced: ",
              outputs.size(), " output lists, expected ", size_, " (one per rank)");
  std::vector<at::Tensor> all;
  for (const std::vector<at::Tensor>& list : outputs) {
    TORCH_CHECK(list.size() == inputs.size(), "mixccl allgather_coalesced: an output list has ",
                list.size(), " tensors for ", inputs.size(), " inputs");
    for (size_t i = 0; i < inputs.size(); ++i)
      checkMatches(list[i], inputs[i].scalar_type(), inputs[i].numel(), "allgather_coalesced",
                   "an output");
    all.insert(all.end(), list.begin(), list.end());
  }
  std::vector<std::vector<at::Tensor>> outs = outputs;
  std::vector<at::Tensor> ins = inputs;
  size_t packBelow = pack_.bytes;
  return enqueue(c10d::OpType::ALLGATHER_COALESCED, "allgather_coalesced", all,
                 timeoutOr(opts.timeout), [outs, ins, packBelow](Comm& comm) {
                   runAllgatherCoalesced(comm, outs, ins, packBelow);
                 }, ins);
}

c10::intrusive_ptr<c10d::Work> MixcclBackend::allgather_into_tensor_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions& opts) {
  TORCH_CHECK(outputs.size() == inputs.size(), "mixccl all_gather_into_tensor_coalesced: ",
              outputs.size(), " outputs for ", inputs.size(), " inputs");
  for (size_t i = 0; i < inputs.size(); ++i)
    checkMatches(outputs[i], inputs[i].scalar_type(), inputs[i].numel() * size_,
                 "all_gather_into_tensor_coalesced", "an output");
  std::vector<at::Tensor> outs = outputs, ins = inputs;
  size_t packBelow = pack_.bytes;
  return enqueue(c10d::OpType::COALESCED, "all_gather_into_tensor_coalesced", outputs,
                 timeoutOr(opts.timeout), [outs, ins, packBelow](Comm& comm) {
                   runAllgatherIntoTensorCoalesced(comm, outs, ins, packBelow);
                 }, ins);
}

c10::intrusive_ptr<c10d::Work> MixcclBackend::gather(std::vector<std::vector<at::Tensor>>& outputs,
                                                     std::vector<at::Tensor>& inputs,
                                                     const c10d::GatherOptions& opts) {
  at::Tensor in = onlyTensor(inputs, "gather");
  int root = static_cast<int>(opts.rootRank);
  checkRoot(root, "gather");
  std::vector<at::Tensor> outs;
  if (rank_ == root) {
    TORCH_CHECK(outputs.size() == 1, "mixccl gather: expects one output list at the root, got ",
                outputs.size());
    outs = outputs[0];
    checkList(outs, in, static_cast<size_t>(size_), "gather", "an output");
  } else {
    TORCH_CHECK(outputs.empty() || (outputs.size() == 1 && outputs[0].empty()),
                "mixccl gather: only the root (rank ", root, ") takes outputs");
  }
  return enqueue(c10d::OpType::GATHER, "gather", outs, timeoutOr(opts.timeout),
                 [in, outs, root](Comm& comm) {
                   at::Tensor flat;
                   if (comm.rank() == root)
                     flat = at::empty({in.numel() * comm.size()},
                                      in.options().device(comm.bufferDevice()));
                   runGather(comm, flat, in, root);
                   if (comm.rank() == root) scatterFlat(flat, outs);
                 }, {in});
}

c10::intrusive_ptr<c10d::Work> MixcclBackend::scatter(std::vector<at::Tensor>& outputs,
                                                      std::vector<std::vector<at::Tensor>>& inputs,
                                                      const c10d::ScatterOptions& opts) {
  at::Tensor out = onlyTensor(outputs, "scatter");
  int root = static_cast<int>(opts.rootRank);
  checkRoot(root, "scatter");
  std::vector<at::Tensor> ins;
  if (rank_ == root) {
    TORCH_CHECK(inputs.size() == 1, "mixccl scatter: expects one input list at the root, got ",
                inputs.size());
    ins = inputs[0];
    checkList(ins, out, static_cast<size_t>(size_), "scatter", "an input");
  } else {
    TORCH_CHECK(inputs.empty() || (inputs.size() == 1 && inputs[0].empty()),
                "mixccl scatter: only the root (rank ", root, ") takes inputs");
  }
  return enqueue(c10d::OpType::SCATTER, "scatter", outputs, timeoutOr(opts.timeout),
                 [out, ins, root](Comm& comm) {
                   at::Tensor flat;
                   if (comm.rank() == root) flat = stackFlat(ins, comm.bufferDevice());
                   runScatter(comm, out, flat, root);
                 }, ins);
}

c10::intrusive_ptr<c10d::Work> MixcclBackend::reduce_scatter(
    std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
    const c10d::ReduceScatterOptions& opts) {
  at::Tensor out = onlyTensor(outputs, "reduce_scatter");
  TORCH_CHECK(inputs.size() == 1, "mixccl reduce_scatter: expects one input list, got ",
              inputs.size());
  std::vector<at::Tensor> ins = inputs[0];
  checkList(ins, out, static_cast<size_t>(size_), "reduce_scatter", "an input");
  Reduction how = reductionFor(opts.reduceOp, out.scalar_type(), "reduce_scatter");
  return enqueue(c10d::OpType::REDUCE_SCATTER, "reduce_scatter", outputs, timeoutOr(opts.timeout),
                 [out, ins, how](Comm& comm) {
                   runReduceScatter(comm, out, stackFlat(ins, comm.bufferDevice()), how);
                 }, ins);
}

c10::intrusive_ptr<c10d::Work> MixcclBackend::_reduce_scatter_base(
    at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) {
  checkMatches(input, output.scalar_type(), output.numel() * size_, "reduce_scatter_tensor",
               "the input");
  Reduction how = reductionFor(opts.reduceOp, output.scalar_type(), "reduce_scatter_tensor");
  at::Tensor out = output, in = input;
  return enqueue(c10d::OpType::_REDUCE_SCATTER_BASE, "reduce_scatter_tensor", {output},
                 timeoutOr(opts.timeout),
                 [out, in, how](Comm& comm) { runReduceScatter(comm, out, in, how); }, {input});
}

c10::intrusive_ptr<c10d::Work> MixcclBackend::reduce_scatter_tensor_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::ReduceScatterOptions& opts) {
  TORCH_CHECK(outputs.size() == inputs.size(), "mixccl reduce_scatter_tensor_coalesced: ",
              outputs.size(), " outputs for ", inputs.size(), " inputs");
  std::vector<Reduction> hows;
  for (size_t i = 0; i < inputs.size(); ++i) {
    checkMatches(inputs[i], outputs[i].scalar_type(), outputs[i].numel() * size_,
                 "reduce_scatter_tensor_coalesced", "an input");
    hows.push_back(reductionFor(opts.reduceOp, outputs[i].scalar_type(),
                                "reduce_scatter_tensor_coalesced"));
  }
  std::vector<at::Tensor> outs = outputs, ins = inputs;
  size_t packBelow = pack_.bytes;
  return enqueue(c10d::OpType::COALESCED, "reduce_scatter_tensor_coalesced", outputs,
                 timeoutOr(opts.timeout), [outs, ins, hows, packBelow](Comm& comm) {
                   runReduceScatterCoalesced(comm, outs, ins, hows, packBelow);
                 }, ins);
}

c10::intrusive_ptr<c10d::Work> MixcclBackend::alltoall_base(at::Tensor& output, at::Tensor& input,
                                                            std::vector<int64_t>& outputSplits,
                                                            std::vector<int64_t>& inputSplits,
                                                            const c10d::AllToAllOptions& opts) {
  TORCH_CHECK(output.scalar_type() == input.scalar_type(), "mixccl all_to_all_single: output ",
              "dtype ", c10::toString(output.scalar_type()), " differs from input dtype ",
              c10::toString(input.scalar_type()));
  // torch splits along dim 0; mixccl counts elements: rows times the elements of one row.
  auto counts = [this](const at::Tensor& t, const std::vector<int64_t>& splits,
                       const char* what) {
    std::vector<int64_t> c(size_);
    int64_t rows = t.dim() == 0 ? 1 : t.size(0);
    int64_t perRow = rows == 0 ? 0 : t.numel() / rows;
    if (splits.empty()) {
      TORCH_CHECK(rows % size_ == 0, "mixccl all_to_all_single: the ", what, "'s ", rows,
                  " rows do not divide among ", size_, " ranks; give split sizes");
      for (auto& x : c) x = rows / size_ * perRow;
    } else {
      TORCH_CHECK(splits.size() == static_cast<size_t>(size_), "mixccl all_to_all_single: ",
                  splits.size(), " ", what, " split sizes for ", size_, " ranks");
      int64_t sum = 0;
      for (int i = 0; i < size_; ++i) {
        TORCH_CHECK(splits[i] >= 0, "mixccl all_to_all_single: negative ", what, " split size");
        sum += splits[i];
        c[i] = splits[i] * perRow;
      }
      TORCH_CHECK(sum == rows, "mixccl all_to_all_single: ", what, " split sizes add up to ",
                  sum, ", the ", what, " has ", rows, " rows");
    }
    return c;
  };
  std::vector<int64_t> sendCounts = counts(input, inputSplits, "input");
  std::vector<int64_t> recvCounts = counts(output, outputSplits, "output");
  TORCH_CHECK(sendCounts[rank_] == recvCounts[rank_], "mixccl all_to_all_single: rank ", rank_,
              " sends itself ", sendCounts[rank_], " elements but expects ", recvCounts[rank_]);
  at::Tensor out = output, in = input;
  return enqueue(c10d::OpType::ALLTOALL_BASE, "all_to_all_single", {output},
                 timeoutOr(opts.timeout), [out, in, sendCounts, recvCounts](Comm& comm) {
                   runAlltoallv(comm, out, in, sendCounts, recvCounts);
                 }, {input});
}

c10::intrusive_ptr<c10d::Work> MixcclBackend::alltoall(std::vector<at::Tensor>& outputs,
                                                       std::vector<at::Tensor>& inputs,
                                                       const c10d::AllToAllOptions& opts) {
  TORCH_CHECK(outputs.size() == static_cast<size_t>(size_) &&
                  inputs.size() == static_cast<size_t>(size_),
              "mixccl all_to_all: expects ", size_, " inputs and outputs, got ", inputs.size(),
              " and ", outputs.size());
  for (int i = 0; i < size_; ++i)
    TORCH_CHECK(outputs[i].scalar_type() == inputs[i].scalar_type(),
                "mixccl all_to_all: output ", i, " has dtype ",
                c10::toString(outputs[i].scalar_type()), ", input ", i, " has ",
                c10::toString(inputs[i].scalar_type()));
  checkMatches(outputs[rank_], inputs[rank_].scalar_type(), inputs[rank_].numel(), "all_to_all",
               "this rank's own output");
  std::vector<at::Tensor> outs = outputs, ins = inputs;
  return enqueue(c10d::OpType::ALLTOALL, "all_to_all", outputs, timeoutOr(opts.timeout),
                 [outs, ins](Comm& comm) { runAlltoallList(comm, outs, ins); }, ins);
}

}  // namespace mixccl_torch
