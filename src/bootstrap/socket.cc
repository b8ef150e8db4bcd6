#include "bootstrap/socket.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
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

Result acceptBefore(const Socket& listener, const Deadline& deadline, Socket* conn,
                    SocketAddress* peer) {
  for (;;) {
    pollfd p{listener.fd(), POLLIN, 0};
    int rc;
    {
      ForkGuardPause waiting;
      rc = poll(&p, 1, deadline.remainingMs(100));
    }
    if (rc < 0 && errno != EINTR)
      return raiseError(mixcclSystemError, "poll on listener: %s", strerror(errno));
    if (rc > 0) {
      peer->length = sizeof(peer->storage);
      int fd = ::accept4(listener.fd(), peer->sa(), &peer->length, SOCK_CLOEXEC);
      if (fd >= 0) {
        *conn = Socket(fd);
        setTcpOptions(fd);
        return mixcclSuccess;
      }
      if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
        return raiseError(mixcclSystemError, "accept: %s", strerror(errno));
    }
    if (cancelled()) return cancelError("a connection");
    if (deadline.expired()) return mixcclTimeout;  // callers say what they waited for
  }
}

Result connectBefore(const SocketAddress& addr, const Deadline& deadline, Socket* conn) {
  int lastErr = 0;
  int backoffMs = 1;
  for (;;) {
    Socket s(::socket(addr.family(), SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!s.valid()) return raiseError(mixcclSystemError, "socket(): %s", strerror(errno));
    if (::connect(s.fd(), addr.sa(), addr.length) == 0) {
      setTcpOptions(s.fd());
      *conn = std::move(s);
      return mixcclSuccess;
    }
    lastErr = errno;
    bool retry = lastErr == ECONNREFUSED || lastErr == ETIMEDOUT || lastErr == ENETUNREACH ||
                 lastErr == EHOSTUNREACH || lastErr == EINTR || lastErr == EAGAIN;
    if (cancelled()) return cancelError(addr.toString().c_str());
    if (!retry || deadline.expired())
      return raiseError(retry ? mixcclTimeout : mixcclSystemError, "cannot connect to %s: %s",
                        addr.toString().c_str(), strerror(lastErr));
    {
      ForkGuardPause waiting;
      std::this_thread::sleep_for(std::chrono::milliseconds(backoffMs));
    }
    backoffMs = backoffMs < 100 ? backoffMs * 2 : 100;
  }
}

Result sendAllBefore(const Socket& s, const void* buf, size_t n, const Deadline& deadline,
                     const char* what) {
  const char* p = static_cast<const char*>(buf);
  while (n > 0) {
    ssize_t k = ::send(s.fd(), p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (k > 0) { p += k; n -= (size_t)k; continue; }
    if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
      return raiseError(mixcclRemoteError, "send to %s failed: %s", what, strerror(errno));
    if (cancelled()) return cancelError(what);
    if (deadline.expired())
      return raiseError(mixcclTimeout, "timed out sending to %s", what);
    pollfd pfd{s.fd(), POLLOUT, 0};
    ForkGuardPause waiting;
    poll(&pfd, 1, deadline.remainingMs(100));
  }
  return mixcclSuccess;
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
  if (r == mixcclSuccess) return r;
  if (r == mixcclInvalidUsage) return cancelError(what);
  if (r == mixcclTimeout) return raiseError(mixcclTimeout, "timed out receiving from %s", what);
  if (why == "closed the connection")
    return raiseError(mixcclRemoteError, "connection closed by %s", what);
  const std::string failed = "receive failed: ";  // the rest is strerror's text
  return raiseError(mixcclRemoteError, "receive from %s failed: %s", what,
                    why.substr(failed.size()).c_str());
}

}  // namespace mixccl
