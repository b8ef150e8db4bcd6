#include "bootstrap/auth_connect.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "bootstrap/fork_guard.h"
#include "base/error.h"
#include "base/log.h"

namespace mixccl {
namespace {

constexpr int kFirstPauseMs = 10;
constexpr int kLongestPauseMs = 200;
constexpr int kCancelCheckMs = 50;  // an abort must be seen within 100 ms (socket.h)

// Half of bound plus a random share of the other half.
int jittered(int bound) {
  uint32_t r = 0;
  if (randomBytes(&r, sizeof(r)) != mixcclSuccess) return bound;
  return bound / 2 + (int)(r % (uint32_t)(bound / 2 + 1));
}

}  // namespace

Result connectAuthenticated(const SocketAddress& addr, const Secret& secret,
                            const Deadline& deadline, const char* what, Socket* conn,
                            bool listening) {
  int pauseMs = kFirstPauseMs;
  for (int closed = 1;; ++closed) {
    Socket s;
    MIXCCL_CHECK(connectBefore(addr, deadline, &s, listening));
    bool closedEarly = false;
    Result r = authenticateClient(s, secret, deadline, what, &closedEarly);
    if (!closedEarly) {
      if (r == mixcclSuccess) *conn = std::move(s);
      return r;
    }
    const int waitMs = std::min(jittered(pauseMs), deadline.remainingMs());
    if (waitMs <= 0 || deadline.expired())
      return raiseError(mixcclTimeout,
                        "%s closed the connection before the handshake %d times, until the "
                        "deadline (MIXCCL_TIMEOUT_S): a listener flooded by strangers drops its "
                        "idlest connections", what, closed);
    INFO(kLogBootstrap, "%s closed the connection before the handshake; connecting again in %d ms",
         what, waitMs);
    const Deadline resume = Deadline::afterSeconds(waitMs / 1000.0);
    while (!resume.expired()) {
      if (threadCancelled())
        return raiseError(mixcclInvalidUsage,
                          "stopped waiting for %s: the communicator was aborted", what);
      ForkGuardPause waiting;
      std::this_thread::sleep_for(std::chrono::milliseconds(resume.remainingMs(kCancelCheckMs)));
    }
    pauseMs = std::min(pauseMs * 2, kLongestPauseMs);
  }
}

}  // namespace mixccl
