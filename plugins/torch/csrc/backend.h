// c10d::Backend "mixccl": torch.distributed collectives and point-to-point on a mixccl
// communicator. Every call checks its arguments on the caller's thread (a bad call raises at
// once and leaves the group usable), then returns a Work while a worker thread runs it.
#pragma once

#include "comm.h"
#include "op_order.h"
#include "pack_plan.h"
#include "p2p_engine.h"
#include "p2p_lanes.h"
#include "worker.h"
#include "work.h"

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>

namespace mixccl_torch {

class MixcclBackend : public c10d::Backend {
 public:
  // packSetting: MIXCCL_TORCH_PACK_BYTES as set when the first group was made; the bound of
  // this group follows from it and this group's communicator (pack_plan.h, packBoundFor).
  MixcclBackend(c10::intrusive_ptr<c10d::Store> store, std::unique_ptr<Comm> comm,
                std::chrono::milliseconds timeout, std::optional<size_t> packSetting,
                const char* formedBy = "store");
  ~MixcclBackend() override;

  // A new communicator through the store (rank 0 publishes the unique id). Reads
  // MIXCCL_TORCH_PACK_BYTES (pack_plan.h); groups split from it keep its setting.
  static c10::intrusive_ptr<MixcclBackend> create(const c10::intrusive_ptr<c10d::Store>& store,
                                                  int rank, int size,
                                                  std::chrono::milliseconds timeout);
  // new_group by mixcclCommSplit of this group, in order with its collectives. Every rank of
  // this group calls it; those not in globalRanks pass member=false and get nullptr.
  c10::intrusive_ptr<MixcclBackend> splitGroup(const c10::intrusive_ptr<c10d::Store>& store,
                                               bool member, int key,
                                               std::chrono::milliseconds timeout);

  // torch.distributed.shrink_group (backend_shrink.cc): a new group of this group's ranks
  // but the excluded ones, by mixcclCommShrink. Every surviving rank calls it with the same
  // list. SHRINK_ABORT (1) gives this group up first (after a peer failed; its calls then fail
  // and it can only be destroyed); SHRINK_DEFAULT (0) needs it healthy and runs in order with
  // its collectives. opts: a timeout for the new group (default: this group's).
  c10::intrusive_ptr<c10d::Backend> shrink(
      const std::vector<int64_t>& ranksToExclude, int shrinkFlags,
      const c10::intrusive_ptr<c10d::Backend::Options>& opts) override;

  // Stops this group's work on this rank and on every rank it reaches (backend_shrink.cc), so
  // that a rank waiting on a live peer of the group is released when that peer gives up; the
  // group can then only be shrunk with SHRINK_ABORT or destroyed. Any thread.
  void revoke();

  const std::string getBackendName() const override { return "mixccl"; }
  bool supportsSplitting() const override { return true; }
  bool supportsShrinking() const override { return true; }

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
      std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors,
                                        const c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_coalesced(
      std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                        std::vector<at::Tensor>& inputs,
                                        const c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs,
                                         std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& outputSplits,
                                               std::vector<int64_t>& inputSplits,
                                               const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs,
                                          std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dstRank,
                                      int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int srcRank,
                                      int tag) override;
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors,
                                               int tag) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override;
  void monitoredBarrier(const c10d::BarrierOptions& opts, bool waitAllRanks) override;
  uint64_t getSequenceNumberForGroup() override { return seq_.load(); }

  void abort() override;
  void shutdown() override;

  // For tests and the Python side.
  std::string adaptor() const;
  // mixcclCommInspect on the group's communicator (docs/inspect.md).
  std::string inspect(const std::string& key) const;
  // Communicators point-to-point holds: the group's two (host memory, one per direction),
  // plus the lanes of device memory and CUDA tensors (p2p_lanes.h).
  size_t p2pCommCount() {
    return (p2p_ ? p2p_->commCount() : 0) + (lanes_ ? lanes_->laneCount() : 0);
  }
  // mixcclCommInspect on a point-to-point communicator (direction 0: messages to higher
  // ranks and from lower ones; 1: the others).
  std::string p2pInspect(const std::string& key, int direction);
  int timeoutSeconds() const;
  // "split" (mixcclCommSplit of a parent group), "shrink" (mixcclCommShrink of one) or "store"
  // (a new communicator).
  const char* formedBy() const { return formedBy_; }
  size_t packBelowBytes() const { return pack_.bytes; }
  const std::string& packWhy() const { return pack_.why; }
  // Collective calls made on the group's communicator so far (Comm::collectiveCalls).
  uint64_t mixcclCalls() const { return comm_->collectiveCalls(); }

 private:
  // Enqueues body (run on the worker, on this group's communicator) behind a new Work.
  // inputs: the tensors the call reads besides outputs; with outputs they decide its route
  // (placement.h) and, for CUDA tensors, are kept for the internal stream.
  c10::intrusive_ptr<c10d::Work> enqueue(c10d::OpType type, const char* opName,
                                         std::vector<at::Tensor> outputs,
                                         std::chrono::milliseconds timeout,
                                         std::function<void(Comm&)> body,
                                         const std::vector<at::Tensor>& inputs = {});
  std::chrono::milliseconds timeoutOr(std::chrono::milliseconds opTimeout) const;
  void checkOpen(const char* opName) const;
  void checkRoot(int root, const char* opName) const;
  void checkPeer(int peer, const char* opName) const;

  c10::intrusive_ptr<c10d::Store> store_;
  std::unique_ptr<Comm> comm_;
  std::chrono::milliseconds timeout_;
  std::optional<size_t> packSetting_;
  PackBound pack_;
  const char* formedBy_;
  std::atomic<uint64_t> seq_{0};
  int shrinks_ = 0;  // shrinks started from this group: each new group's store prefix
  std::atomic<bool> aborted_{false};
  std::atomic<bool> shutDown_{false};
  // Point-to-point: p2p_ on host-memory groups (null on device-memory ones), lanes_ for the
  // rest (device memory, CUDA tensors).
  std::unique_ptr<P2PEngine> p2p_;
  std::unique_ptr<P2PLanes> lanes_;
  FenceSource fences_;              // the worker's internal CUDA streams
  std::unique_ptr<Worker> worker_;  // declared last: joined first
};

}  // namespace mixccl_torch
