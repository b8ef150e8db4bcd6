#include "transport/socket_connection.h"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>

#include "base/error.h"

namespace mixccl {

namespace {
// Frames are at least this large (unless the message is smaller) so that splitting a message
// across connections does not cost more in headers and system calls than it gains.
constexpr size_t kMinFrameBytes = 64 << 10;
}  // namespace

SocketConnection::SocketConnection(int peer, std::vector<Socket> sockets, size_t frameBytes)
    : StreamConnection(peer, sockets.size()), sockets_(std::move(sockets)), frameBytes_(frameBytes) {
  for (size_t i = 0; i < sockets_.size(); ++i) lanes()[i].fd = sockets_[i].fd();
}

SocketConnection::~SocketConnection() {
  for (Socket& s : sockets_) s.shutdown();
}

Result SocketConnection::start(TransportEvents* events) {
  for (Socket& s : sockets_) MIXCCL_CHECK(setNonBlocking(s.fd(), true));
  return StreamConnection::start(events);
}

void SocketConnection::abandon() {
  StreamConnection::abandon();
  // The peer learns of the failure at once from the cut connections.
  for (Socket& s : sockets_) s.shutdown();
}

ssize_t SocketConnection::laneSend(Lane& l, const iovec* iov, int n) {
  msghdr msg{};
  msg.msg_iov = const_cast<iovec*>(iov);
  msg.msg_iovlen = n;
  return sendmsg(l.fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
}

ssize_t SocketConnection::laneRecv(Lane& l, void* buf, size_t n, void* spill, size_t spillBytes,
                                   size_t* spilled) {
  if (!spill) return recv(l.fd, buf, n, MSG_DONTWAIT);
  iovec iov[2] = {{buf, n}, {spill, spillBytes}};
  msghdr msg{};
  msg.msg_iov = iov;
  msg.msg_iovlen = 2;
  ssize_t k = recvmsg(l.fd, &msg, MSG_DONTWAIT);
  if (k <= (ssize_t)n) return k;
  *spilled = (size_t)k - n;
  return (ssize_t)n;
}

size_t SocketConnection::frameBytesFor(const TransportRequest& r) const {
  size_t share = (r.bytes + sockets_.size() - 1) / sockets_.size();
  return std::min(frameBytes_, std::max(kMinFrameBytes, share));
}

void SocketConnection::laneGoodbye(Lane& l) {
  FrameHeader bye{kFrameMagic, 0, 0, 0, 0, kFrameFlagBye, 0};
  // Best effort and silent: a peer that already left needs no goodbye.
  ssize_t rc = ::send(l.fd, &bye, sizeof(bye), MSG_NOSIGNAL | MSG_DONTWAIT);
  (void)rc;
}

Result SocketTransport::connect(const TransportSetup& setup, const std::vector<int>& candidates,
                                std::vector<std::unique_ptr<Connection>>* out) {
  for (int p : candidates) {
    std::vector<Socket>& conns = (*setup.conns)[p];
    if (conns.size() < 2)
      return raiseError(mixcclInternalError, "rank %d: no data connection to rank %d",
                        setup.rank, p);
    std::vector<Socket> data;
    for (size_t i = 1; i < conns.size(); ++i) data.push_back(std::move(conns[i]));
    conns.resize(1);
    (*out)[p].reset(new SocketConnection(p, std::move(data), setup.frameBytes));
  }
  return mixcclSuccess;
}

}  // namespace mixccl
