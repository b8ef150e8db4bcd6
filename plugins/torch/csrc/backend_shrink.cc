// torch.distributed.shrink_group on a mixccl group: the survivors' new group by mixcclCommShrink
// (docs/reliability.md, "PyTorch: shrink_group"). torch checks the list (in range, no
// duplicates, not the caller) before it calls here; mixccl checks that every survivor passed
// the same one. Before it, revoke() releases the ranks that wait on this one (a survivor that
// sees a failure first revokes, so the others hear of it at once, not at their timeout).
#include "backend.h"

#include <c10/util/Exception.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>

#include <string>
#include <vector>

namespace mixccl_torch {

c10::intrusive_ptr<c10d::Backend> MixcclBackend::shrink(
    const std::vector<int64_t>& ranksToExclude, int shrinkFlags,
    const c10::intrusive_ptr<c10d::Backend::Options>& opts) {
  TORCH_CHECK(shrinkFlags == MIXCCL_SHRINK_DEFAULT || shrinkFlags == MIXCCL_SHRINK_ABORT,
              "mixccl shrink: shrink_flags ", shrinkFlags,
              " is neither SHRINK_DEFAULT (0) nor SHRINK_ABORT (1)");
  checkOpen("shrink");
  std::vector<int> excluded(ranksToExclude.begin(), ranksToExclude.end());
  std::chrono::milliseconds timeout = opts ? opts->timeout : timeout_;
  std::unique_ptr<Comm> child;
  if (shrinkFlags == MIXCCL_SHRINK_ABORT) {
    // This group is given up: later calls are refused, queued ones fail at once, and the
    // shrink stops the communicator's work, so a call of the worker blocked on a dead peer
    // returns. Hence on the caller's thread: the worker may be that blocked call.
    aborted_.store(true);
    if (p2p_) p2p_->abort();
    lanes_->abort();
    child = Comm::shrink(*comm_, excluded, MIXCCL_SHRINK_ABORT, timeout, "torch");
  } else {
    // A healthy group stays usable: the shrink is one of its collectives, in order with them.
    worker_->runAndWait(
        [&] { child = Comm::shrink(*comm_, excluded, MIXCCL_SHRINK_DEFAULT, timeout, "torch"); });
  }
  // The new group's point-to-point lanes meet in the store under their own prefix: their
  // keys (ranks and tags) would otherwise be those of this group's lanes, renumbered.
  std::string prefix = "mixccl/shrunk";
  for (int r : excluded) prefix += "-" + std::to_string(r);
  prefix += "/" + std::to_string(++shrinks_) + "/";
  auto store = c10::make_intrusive<c10d::PrefixStore>(prefix, store_);
  return c10::make_intrusive<MixcclBackend>(store, std::move(child), timeout, packSetting_,
                                            "shrink");
}

void MixcclBackend::revoke() {
  if (aborted_.load() || shutDown_.load()) return;  // its work has stopped already
  // The revoke first: its notices are out when it returns, so the group's other ranks hear of
  // it before a point-to-point peer, released below, can go on to give up the group itself.
  // Aborting the point-to-point communicator (and each lane, a communicator of two ranks) cuts
  // its connections, so the peer of a transfer in flight or posted later fails at once instead
  // of at its timeout.
  comm_->revoke();
  if (p2p_) p2p_->abort();
  lanes_->abort();
}

}  // namespace mixccl_torch
