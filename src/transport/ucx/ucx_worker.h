// A communicator's UCP instance: one context (TAG and WAKEUP features) and one worker. UCX
// reads its own environment (UCX_TLS, UCX_NET_DEVICES, ...) through ucp_config_read; nothing
// here overrides it, so a cluster's usual UCX settings apply unchanged.
//
// Thread mode: SERIALIZED. The worker is touched by whichever thread drives the communicator's
// progress (a waiting caller or the proxy thread), always under the proxy's progress lock, so
// calls never overlap but do come from more than one thread: exactly what SERIALIZED promises,
// without the locking cost of MULTI.
#pragma once

#include <ucp/api/ucp.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/result.h"

namespace mixccl {

class UcxWorker {
 public:
  // Creates the context and worker; the error names UCX's status and the UCX_TLS in force.
  // segmentBytes: the size UCX's tcp transport cuts messages into (UCX_TCP_TX_SEG_SIZE and
  // _RX_), unless the environment sets them; 0 leaves UCX's defaults.
  static Result create(int rank, int nranks, size_t segmentBytes, std::shared_ptr<UcxWorker>* out);
  ~UcxWorker();
  UcxWorker(const UcxWorker&) = delete;
  UcxWorker& operator=(const UcxWorker&) = delete;

  ucp_worker_h handle() const { return worker_; }
  // The packed worker address peers connect to (sent only over authenticated connections).
  const std::vector<uint8_t>& address() const { return address_; }
  // Signalled after arm() when the worker has events.
  int eventFd() const { return efd_; }
  // UCX was built with CUDA memory support (ucp_context_query: UCS_MEMORY_TYPE_CUDA), so a
  // device buffer can be handed to it directly.
  bool movesDeviceMemory() const { return cuda_; }
  // "host" or "host,cuda", ... what UCX reports it can move (INFO, docs).
  const std::string& memoryTypes() const { return memoryTypes_; }
  // "tcp segments 256 KiB", "tcp segments from the environment (UCX_TCP_TX_SEG_SIZE)", ...: INFO.
  const std::string& segments() const { return segments_; }

  // One pass of ucp_worker_progress until it reports nothing more (bounded); returns whether
  // anything happened.
  bool progress();
  // Arms the event fd; false when events are pending (the caller must not block).
  bool arm();

  // Whether endpoints ask for UCP_ERR_HANDLING_MODE_PEER. UCX refuses it where its transports
  // cannot detect a dead peer (shared memory: UCX_TLS=sm); the first refusal turns it off for
  // this worker and the pair's control connection alone tells of a peer's death.
  // Pairs connected on first use (UcxTransport::connectOnFirstUse): the first connection the
  // engine starts drives the worker; true for exactly one caller.
  bool claimDriver() { return !driverClaimed_.exchange(true); }

  bool peerErrorMode() const { return peerErrorMode_; }
  void disablePeerErrorMode() { peerErrorMode_ = false; }

 private:
  UcxWorker() = default;

  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  std::vector<uint8_t> address_;
  int efd_ = -1;
  bool cuda_ = false;
  bool peerErrorMode_ = true;
  std::atomic<bool> driverClaimed_{false};
  std::string memoryTypes_;
  std::string segments_;
};

// UCX's name for a status, for messages.
const char* ucxStatusText(ucs_status_t s);
// What ucp_ep_print_info says of an endpoint.
std::string ucxEndpointInfo(ucp_ep_h ep);
// From that: the transports of its lanes in lane order without repeats ("tcp", "posix,cma"; ""
// if UCX printed none), and the largest tagged send that goes eagerly in one short message (0:
// not printed), which follows the tcp segment size (UCX's check that a setting took effect).
std::string ucxEndpointTransports(const std::string& info);
size_t ucxEagerShortBytes(const std::string& info);
// The UCX_TLS in force ("UCX_TLS unset" when UCX chooses), for messages and INFO.
std::string ucxTlsSetting();

}  // namespace mixccl
