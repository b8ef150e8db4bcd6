#include "bootstrap/socket.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <thread>

#include "bootstrap/fork_guard.h"
#include "base/error.h"

namespace mixccl {
namespace {
thread_local const std::atomic<bool>* tlsCancel = nullptr;

bool cancelled() { return tlsCancel && tlsCancel->load(std::memory_order_acquire); }

Result cancelError(const char* what) {
  return raiseError(mixcclInvalidUsage, "stopped waiting for %s: the communicator was aborted",
                    what);
}
}  // namespace

void setThreadCancelFlag(const std::atomic<bool>* flag) { tlsCancel = flag; }

const std::atomic<bool>* threadCancelFlag() { return tlsCancel; }

bool threadCancelled() { return cancelled(); }

void Socket::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void Socket::shutdown() {
  if (fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);
}

Result setNonBlocking(int fd, bool on) {
  int flags = fcntl(fd, F_GETFL);
  if (flags < 0) return raiseError(mixcclSystemError, "fcntl(F_GETFL): %s", strerror(errno));
  flags = on ? (flags | O_NONBLOCK) : (flags & ~O_NONBLOCK);
  if (fcntl(fd, F_SETFL, flags) < 0)
    return raiseError(mixcclSystemError, "fcntl(F_SETFL): %s", strerror(errno));
  return mixcclSuccess;
}

void setTcpOptions(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
}

Result listenOn(const SocketAddress& addr, Socket* listener, SocketAddress* bound) {
  Socket s(::socket(addr.family(), SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!s.valid()) return raiseError(mixcclSystemError, "socket(): %s", strerror(errno));
  int one = 1;
  setsockopt(s.fd(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(s.fd(), addr.sa(), addr.length) != 0)
    return raiseError(mixcclSystemError, "cannot bind to %s: %s", addr.toString().c_str(),
                      strerror(errno));
  if (::listen(s.fd(), 1024) != 0)
    return raiseError(mixcclSystemError, "listen on %s: %s", addr.toString().c_str(),
                      strerror(errno));
  bound->length = sizeof(bound->storage);
  if (getsockname(s.fd(), bound->sa(), &bound->length) != 0)
    return raiseError(mixcclSystemError, "getsockname: %s", strerror(errno));
  *listener = std::move(s);
  return mixcclSuccess;
}

namespace {

// A connection request nobody answers within this long is sent again on a new socket, and the
// bound doubles up to the longest (a far peer may need more than the first).
constexpr int kFirstAttemptMs = 250;
constexpr int kLongestAttemptMs = 2000;

// Waits for a nonblocking connect to finish: 0 once connected, else the errno that ended it
// (ETIMEDOUT when nothing answered within waitMs or before the deadline).
int awaitConnect(const Socket& s, int waitMs, const Deadline& deadline) {
  Deadline attempt = Deadline::afterSeconds(waitMs / 1000.0);
  if (attempt.at() > deadline.at()) attempt = deadline;
  for (;;) {
    pollfd p{s.fd(), POLLOUT, 0};
    int rc;
    {
      ForkGuardPause waiting;
      rc = poll(&p, 1, attempt.remainingMs(100));
    }
    if (rc > 0) {
      int err = 0;
      socklen_t len = sizeof(err);
      if (getsockopt(s.fd(), SOL_SOCKET, SO_ERROR, &err, &len) != 0) return errno;
      return err;
    }
    if (rc < 0 && errno != EINTR) return errno;
    if (cancelled()) return ECANCELED;
    if (attempt.expired()) return ETIMEDOUT;
  }
}

}  // namespace

Result connectBefore(const SocketAddress& addr, const Deadline& deadline, Socket* conn,
                     bool listening) {
  int backoffMs = 1;
  int attemptMs = kFirstAttemptMs;
  for (;;) {
    Socket s(::socket(addr.family(), SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!s.valid()) return raiseError(mixcclSystemError, "socket(): %s", strerror(errno));
    int err = ::connect(s.fd(), addr.sa(), addr.length) == 0 ? 0 : errno;
    if (err == EINPROGRESS) err = awaitConnect(s, attemptMs, deadline);
    if (err == 0) {
      MIXCCL_CHECK(setNonBlocking(s.fd(), false));  // as callers expect (they poll themselves)
      setTcpOptions(s.fd());
      *conn = std::move(s);
      return mixcclSuccess;
    }
    // Reset: accepted and closed at once (by a listener flooded with strangers), seen only now.
    bool retry = err == ECONNREFUSED || err == ECONNRESET || err == ETIMEDOUT ||
                 err == ENETUNREACH || err == EHOSTUNREACH || err == EINTR || err == EAGAIN;
    if (cancelled()) return cancelError(addr.toString().c_str());
    if (listening && err == ECONNREFUSED)
      return raiseError(mixcclRemoteError, "cannot connect to %s: %s (its process has ended or "
                        "left the communicator)", addr.toString().c_str(), strerror(err));
    if (!retry || deadline.expired())
      return raiseError(retry ? mixcclTimeout : mixcclSystemError, "cannot connect to %s: %s",
                        addr.toString().c_str(), strerror(err));
    if (err == ETIMEDOUT) {  // the attempt itself waited: try again at once, a little longer
      attemptMs = std::min(attemptMs * 2, kLongestAttemptMs);
      continue;
    }
    {
      ForkGuardPause waiting;
      std::this_thread::sleep_for(std::chrono::milliseconds(backoffMs));
    }
    backoffMs = backoffMs < 100 ? backoffMs * 2 : 100;
  }
}

Result sendAllQuietly(const Socket& s, const void* buf, size_t n, const Deadline& deadline,
                      std::string* why) {
  const char* p = static_cast<const char*>(buf);
  while (n > 0) {
    ssize_t k = ::send(s.fd(), p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (k > 0) { p += k; n -= (size_t)k; continue; }
    if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      *why = std::string("send failed: ") + strerror(errno);
      return mixcclRemoteError;
    }
    if (cancelled()) {
      *why = "the communicator was aborted";
      return mixcclInvalidUsage;
    }
    if (deadline.expired()) {
      *why = "timed out";
      return mixcclTimeout;
    }
    pollfd pfd{s.fd(), POLLOUT, 0};
    ForkGuardPause waiting;
    poll(&pfd, 1, deadline.remainingMs(100));
  }
  return mixcclSuccess;
}

Result sendAllBefore(const Socket& s, const void* buf, size_t n, const Deadline& deadline,
                     const char* what) {
  std::string why;
  Result r = sendAllQuietly(s, buf, n, deadline, &why);
  return r == mixcclSuccess ? r : raiseTransferError(r, why, what, true);
}

Result raiseTransferError(Result r, const std::string& why, const char* what, bool sending) {
  if (r == mixcclInvalidUsage) return cancelError(what);
  if (r == mixcclTimeout)
    return raiseError(mixcclTimeout, "timed out %s %s", sending ? "sending to" : "receiving from",
                      what);
  if (why == "closed the connection")
    return raiseError(mixcclRemoteError, "connection closed by %s", what);
  // why is "send failed: <strerror>" or "receive failed: <strerror>".
  return raiseError(mixcclRemoteError, "%s %s failed: %s", sending ? "send to" : "receive from",
                    what, why.substr(why.find(": ") + 2).c_str());
}

Result recvAllQuietly(const Socket& s, void* buf, size_t n, const Deadline& deadline,
                      std::string* why) {
  char* p = static_cast<char*>(buf);
  while (n > 0) {
    ssize_t k = ::recv(s.fd(), p, n, MSG_DONTWAIT);
    if (k > 0) { p += k; n -= (size_t)k; continue; }
    if (k == 0) {
      *why = "closed the connection";
      return mixcclRemoteError;
    }
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      *why = std::string("receive failed: ") + strerror(errno);
      return mixcclRemoteError;
    }
    if (cancelled()) {
      *why = "the communicator was aborted";
      return mixcclInvalidUsage;
    }
    if (deadline.expired()) {
      *why = "timed out";
      return mixcclTimeout;
    }
    pollfd pfd{s.fd(), POLLIN, 0};
    ForkGuardPause waiting;
    poll(&pfd, 1, deadline.remainingMs(100));
  }
  return mixcclSuccess;
}

Result recvAllBefore(const Socket& s, void* buf, size_t n, const Deadline& deadline,
                     const char* what) {
  std::string why;
  Result r = recvAllQuietly(s, buf, n, deadline, &why);
  return r == mixcclSuccess ? r : raiseTransferError(r, why, what, false);
}

}  // namespace mixccl
