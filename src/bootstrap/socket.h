// A TCP socket owned by RAII, and the deadline-bounded blocking helpers that bootstrap uses.
// (The data path uses the same fds nonblocking from the proxy thread.)
#pragma once

#include <atomic>
#include <cstddef>
#include <string>

#include "bootstrap/socket_address.h"
#include "base/clock.h"
#include "base/result.h"

namespace mixccl {

class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  ~Socket() { close(); }
  Socket(Socket&& o) noexcept : fd_(o.release()) {}
  Socket& operator=(Socket&& o) noexcept {
    if (this != &o) { close(); fd_ = o.release(); }
    return *this;
  }
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;

  int fd() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() { int f = fd_; fd_ = -1; return f; }
  void close();
  // Shuts both directions down so a thread blocked on the fd wakes up.
  void shutdown();

 private:
  int fd_ = -1;
};

// Listens on addr (port 0 picks a free port); *bound receives the actual address.
Result listenOn(const SocketAddress& addr, Socket* listener, SocketAddress* bound);
// Connects, retrying refused/unreachable attempts until the deadline (the other side may not
// be listening yet). An attempt that gets no answer within a short bound is abandoned for a new
// one: a listener whose backlog is full (strangers flooding it) drops the connection request,
// and the kernel would only send it again after a second. listening: the other side is known
// to listen already (a peer's transport listener after init), so a refusal means its process
// ended or left the communicator and fails at once instead of being retried.
Result connectBefore(const SocketAddress& addr, const Deadline& deadline, Socket* conn,
                     bool listening = false);

// Blocking-with-deadline whole-buffer transfers. what names the peer in error messages.
Result sendAllBefore(const Socket& s, const void* buf, size_t n, const Deadline& deadline,
                     const char* what);
Result recvAllBefore(const Socket& s, void* buf, size_t n, const Deadline& deadline,
                     const char* what);
// The same receive without logging: *why says what happened ("closed the connection", "timed
// out", ...), for a caller that logs one better message itself (the handshake, auth.cc).
Result recvAllQuietly(const Socket& s, void* buf, size_t n, const Deadline& deadline,
                      std::string* why);
// The same for sending (*why: "send failed: <reason>", "timed out", ...).
Result sendAllQuietly(const Socket& s, const void* buf, size_t n, const Deadline& deadline,
                      std::string* why);
// Logs what a quiet transfer reported (r, *why) as the ...Before helpers do, naming what.
Result raiseTransferError(Result r, const std::string& why, const char* what, bool sending);

// While a flag is set on a thread, that thread's deadline-bounded helpers above also give up
// (mixcclInvalidUsage) within ~100 ms once *flag becomes true: mixcclCommAbort/Destroy use it
// to stop a communicator that is still initialising in the background. nullptr clears it.
void setThreadCancelFlag(const std::atomic<bool>* flag);
// The calling thread's cancel flag (nullptr: none), to restore after setting another.
const std::atomic<bool>* threadCancelFlag();
// Whether the calling thread's cancel flag is set (for waits of its own between the helpers).
bool threadCancelled();

Result setNonBlocking(int fd, bool on);
void setTcpOptions(int fd);  // TCP_NODELAY, keepalive, large buffers

}  // namespace mixccl
