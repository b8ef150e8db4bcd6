// The socket transport: a peer's data travels over one or more authenticated TCP connections
// (the mesh's data connections, MIXCCL_NSOCKS_PERPEER), frames spread across them. Serves any
// pair; the registry offers it last, as the network every pair can fall back to.
#pragma once

#include <vector>

#include "bootstrap/socket.h"
#include "transport/stream_connection.h"
#include "transport/transport.h"

namespace mixccl {

class SocketConnection : public StreamConnection {
 public:
  // sockets: the data connections to peer (at least one). frameBytes: largest frame.
  SocketConnection(int peer, std::vector<Socket> sockets, size_t frameBytes);
  ~SocketConnection() override;

  const char* transportName() const override { return "socket"; }
  Result start(TransportEvents* events) override;
  void abandon() override;
  std::string detail() const override {
    return std::to_string(sockets_.size()) + (sockets_.size() == 1 ? " connection" : " connections");
  }

 protected:
  ssize_t laneSend(Lane& l, const iovec* iov, int n) override;
  ssize_t laneRecv(Lane& l, void* buf, size_t n, void* spill, size_t spillBytes,
                   size_t* spilled) override;
  size_t frameBytesFor(const TransportRequest& r) const override;
  void laneGoodbye(Lane& l) override;

 private:
  std::vector<Socket> sockets_;
  size_t frameBytes_;
};

class SocketTransport : public Transport {
 public:
  const char* name() const override { return "socket"; }
  bool canConnect(const PeerInfo&, const PeerInfo&) const override { return true; }
  Result connect(const TransportSetup& setup, const std::vector<int>& candidates,
                 std::vector<std::unique_ptr<Connection>>* out) override;
};

}  // namespace mixccl
