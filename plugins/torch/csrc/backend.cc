#include "backend.h"

#include "collectives.h"
#include "pack_plan.h"

#include <c10/util/Exception.h>

namespace mixccl_torch {

MixcclBackend::MixcclBackend(c10::intrusive_ptr<c10d::Store> store, std::unique_ptr<Comm> comm,
                             std::chrono::milliseconds timeout,
                             std::optional<size_t> packSetting, const char* formedBy)
    : c10d::Backend(comm->rank(), comm->size()),
      store_(std::move(store)),
      comm_(std::move(comm)),
      timeout_(timeout),
      packSetting_(packSetting),
      pack_(packBoundFor(packSetting, comm_->shmSlotBytes())),
      formedBy_(formedBy),
      p2p_(comm_->deviceMemory() || !p2pOnGroupCommunicators()
               ? nullptr
               : std::make_unique<P2PEngine>(store_, comm_->rank(), comm_->size(), timeout,
                                             comm_.get())),
      lanes_(std::make_unique<P2PLanes>(store_, comm_->rank(), timeout, comm_->deviceMemory())),
      worker_(std::make_unique<Worker>("mixccl-coll")) {}

MixcclBackend::~MixcclBackend() { shutdown(); }

c10::intrusive_ptr<MixcclBackend> MixcclBackend::create(
    const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
    std::chrono::milliseconds timeout) {
  TORCH_CHECK(size >= 1 && rank >= 0 && rank < size, "mixccl: rank ", rank,
              " is not in a group of size ", size);
  // Before the communicator: a bad value fails every rank alike, before any of them waits.
  std::optional<size_t> packSetting = packBelowBytesSetting();
  p2pOnGroupCommunicators();
  std::unique_ptr<Comm> comm =
      Comm::viaStore(*store, "mixccl/uid", rank, size, timeout, "torch");
  return c10::make_intrusive<MixcclBackend>(store, std::move(comm), timeout, packSetting);
}

c10::intrusive_ptr<MixcclBackend> MixcclBackend::splitGroup(
    const c10::intrusive_ptr<c10d::Store>& store, bool member, int key,
    std::chrono::milliseconds timeout) {
  checkOpen("split");
  std::unique_ptr<Comm> child;
  // A split is a collective of this group: it runs in order with the others.
  worker_->runAndWait([&] { child = Comm::split(*comm_, member ? 0 : -1, key, timeout, "torch"); });
  if (!child) return nullptr;
  return c10::make_intrusive<MixcclBackend>(store, std::move(child), timeout, packSetting_,
                                            "split");
}

int MixcclBackend::timeoutSeconds() const { return mixccl_torch::timeoutSeconds(timeout_); }

std::chrono::milliseconds MixcclBackend::timeoutOr(std::chrono::milliseconds opTimeout) const {
  return opTimeout == c10d::kUnsetTimeout ? timeout_ : opTimeout;
}

void MixcclBackend::checkOpen(const char* opName) const {
  TORCH_CHECK(!aborted_.load(), "mixccl ", opName, ": the process group was aborted");
  TORCH_CHECK(!shutDown_.load(), "mixccl ", opName, ": the process group was shut down");
}

void MixcclBackend::checkRoot(int root, const char* opName) const {
  TORCH_CHECK(root >= 0 && root < size_, "mixccl ", opName, ": invalid root rank ", root,
              " (group of size ", size_, ")");
}

void MixcclBackend::checkPeer(int peer, const char* opName) const {
  TORCH_CHECK(peer >= 0 && peer < size_, "mixccl ", opName, ": invalid peer rank ", peer,
              " (group of size ", size_, ")");
  TORCH_CHECK(peer != rank_, "mixccl ", opName, ": rank ", rank_, " cannot ", opName,
              " to itself");
}

c10::intrusive_ptr<c10d::Work> MixcclBackend::enqueue(c10d::OpType type, const char* opName,
                                                      std::vector<at::Tensor> outputs,
                                                      std::chrono::milliseconds timeout,
                                                      std::function<void(Comm&)> body,
                                                      const std::vector<at::Tensor>& inputs) {
  checkOpen(opName);
  std::vector<at::Tensor> involved = outputs;
  involved.insert(involved.end(), inputs.begin(), inputs.end());
  // On this thread: the caller's current stream is the one to order after.
  OpOrder order = fences_.issue(involved, comm_->deviceMemory(), opName);
  auto work = c10::make_intrusive<MixcclWork>(rank_, type, opName, std::move(outputs), timeout,
                                              order);
  ++seq_;
  Comm* comm = comm_.get();
  worker_->submit([work, comm, body = std::move(body), order, this] {
    if (aborted_.load()) {
      try {
        TORCH_CHECK(false, "mixccl ", work->opName(), ": the process group was aborted");
      } catch (...) {
        work->markFailed(std::current_exception());
      }
      return;
    }
    runOrdered(order, *work, *comm, body);
  });
  return work;
}

c10::intrusive_ptr<c10d::Work> MixcclBackend::send(std::vector<at::Tensor>& tensors, int dstRank,
                                                   int tag) {
  checkOpen("send");
  checkPeer(dstRank, "send");
  const at::Tensor& t = onlyTensor(tensors, "send");
  ++seq_;
  if (p2p_ && !t.is_cuda()) return p2p_->send(t, dstRank, tag);
  return lanes_->send(t, dstRank, tag);
}

c10::intrusive_ptr<c10d::Work> MixcclBackend::recv(std::vector<at::Tensor>& tensors, int srcRank,
                                                   int tag) {
  checkOpen("recv");
  checkPeer(srcRank, "recv");
  const at::Tensor& t = onlyTensor(tensors, "recv");
  ++seq_;
  if (p2p_ && !t.is_cuda()) return p2p_->recv(t, srcRank, tag);
  return lanes_->recv(t, srcRank, tag);
}

c10::intrusive_ptr<c10d::Work> MixcclBackend::recvAnysource(std::vector<at::Tensor>& tensors,
                                                            int tag) {
  checkOpen("recv");
  const at::Tensor& t = onlyTensor(tensors, "recv");
  ++seq_;
  if (p2p_ && !t.is_cuda()) return p2p_->recvAnySource(t, tag);
  return lanes_->recvAnySource(t, tag, size_);
}

c10::intrusive_ptr<c10d::Work> MixcclBackend::barrier(const c10d::BarrierOptions& opts) {
  return enqueue(c10d::OpType::BARRIER, "barrier", {}, timeoutOr(opts.timeout),
                 [](Comm& comm) { runBarrier(comm); });
}

void MixcclBackend::monitoredBarrier(const c10d::BarrierOptions& opts, bool waitAllRanks) {
  checkOpen("monitored_barrier");
  // Through the store, not the communicator: rank 0 must be able to name each rank that did
  // not arrive, which a collective that fails as a whole cannot tell.
  std::chrono::milliseconds timeout = timeoutOr(opts.timeout);
  uint64_t round = ++seq_;
  std::string prefix = "mixccl/monitored_barrier/" + std::to_string(round) + "/";
  if (rank_ != 0) {
    store_->set(prefix + std::to_string(rank_), std::vector<uint8_t>{1});
    store_->wait({prefix + "done"}, timeout);
    return;
  }
  std::vector<int> missing;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (int r = 1; r < size_; ++r) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    // Worded as gloo words it: programs and torch's own tests look for these phrases.
    if (left.count() <= 0 && missing.empty())
      C10_THROW_ERROR(DistBackendError, "mixccl monitored_barrier: Rank 0 timed out in "
                      "monitoredBarrier after " + std::to_string(timeout.count()) + " ms");
    if (left.count() <= 0) break;
    try {
      store_->wait({prefix + std::to_string(r)}, left);
    } catch (const std::exception&) {
      missing.push_back(r);
      if (!waitAllRanks) break;
    }
  }
  if (!missing.empty()) {
    std::string ranks;
    for (int r : missing) ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
    C10_THROW_ERROR(DistBackendError,
                    "mixccl monitored_barrier: Rank" + std::string(missing.size() > 1 ? "s " : " ") +
                        ranks + " failed to pass monitoredBarrier in " +
                        std::to_string(timeout.count()) + " ms");
  }
  store_->set(prefix + "done", std::vector<uint8_t>{1});
}

void MixcclBackend::abort() {
  if (aborted_.exchange(true) || shutDown_.load()) return;
  // Calls blocked on the worker and the lanes return with an error; queued ones fail at once.
  comm_->abort();
  if (p2p_) p2p_->abort();
  lanes_->abort();
}

void MixcclBackend::shutdown() {
  if (shutDown_.exchange(true)) return;
  // Queued work runs first (a destroyed group finishes what it was given), then the threads
  // are joined and the communicators freed.
  if (worker_) worker_->drain();
  worker_.reset();
  p2p_.reset();
  lanes_.reset();
  comm_.reset();
}

}  // namespace mixccl_torch

namespace mixccl_torch {

std::string MixcclBackend::adaptor() const {
  checkOpen("adaptor");
  return comm_->adaptor();
}

std::string MixcclBackend::inspect(const std::string& key) const {
  checkOpen("inspect");
  return comm_->inspect(key);
}

std::string MixcclBackend::p2pInspect(const std::string& key, int direction) {
  checkOpen("inspect");
  TORCH_CHECK(p2p_, "mixccl: this group's point-to-point runs on lanes (device memory), not "
              "on the group's point-to-point communicators");
  return p2p_->inspect(key, direction);
}

}  // namespace mixccl_torch
