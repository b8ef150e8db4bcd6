// The communicator: one rank's membership in a group of ranks, its connections (owned by the
// proxy) and its configuration. mixcclComm_t points to this.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "bootstrap/peer_info.h"
#include "bootstrap/unique_id.h"
#include "core/config.h"
#include "proxy/proxy.h"

struct mixcclComm {
  int rank = 0;
  int nranks = 0;
  int device = -1;
  mixccl::CommConfig config;
  mixccl::UniqueIdData id{};
  std::vector<mixccl::PeerInfo> peers;
  std::unique_ptr<mixccl::Proxy> proxy;

  std::atomic<int> refs{1};  // the owner's reference plus one per API call in progress
  std::atomic<bool> finalized{false};

  void setLastError(const std::string& msg) {
    std::lock_guard<std::mutex> lock(lastErrorMutex);
    lastError = msg;
  }
  std::string getLastError() {
    std::lock_guard<std::mutex> lock(lastErrorMutex);
    return lastError;
  }
  // "rank 3 (hostname)", for messages.
  std::string peerName(int r) const;

 private:
  std::mutex lastErrorMutex;
  std::string lastError;
};

namespace mixccl {

using Comm = mixcclComm;

// Creates and connects a communicator (collective over the nranks ranks of id).
Result initComm(Comm** out, int nranks, const UniqueIdData& id, int rank,
                const CommConfig& config, int device);

}  // namespace mixccl
