// libFuzzer target: the socket transport's receive path, driven for real. A Proxy (rank 0 of 2)
// has a SocketConnection with one or two data connections to "rank 1", which are socket pairs this target writes the input
// into (then ends the stream); receives of sizes chosen by the input are posted, in buffers of
// exactly that size, so any write outside them is caught by AddressSanitizer. Properties:
// every op ends (no hang: waits are bounded), and an op reported done really received all of
// its bytes in order from well-formed frames.
//
// Input layout: [nsocks-1 : 1 bit][nrecv : 2 bits][send : 1 bit] in byte 0, then nrecv sizes
// (2 bytes each, mod 8192), then a 2-byte split point, then the stream: bytes before the
// split go to connection 0, the rest to connection 1 (if there are two).
#include <sys/socket.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <vector>

#include "base/health.h"
#include "proxy/proxy.h"
#include "transport/frame.h"
#include "transport/socket_connection.h"

using namespace mixccl;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  setenv("MIXCCL_DEBUG", "NONE", 1);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const int nsocks = 1 + (data[0] & 1);
  const int nrecv = (data[0] >> 1) & 3;
  const bool postSend = (data[0] >> 3) & 1;
  size_t pos = 1;
  std::vector<size_t> sizes;
  for (int i = 0; i < nrecv && pos + 2 <= size; ++i, pos += 2)
    sizes.push_back((size_t)(data[pos] | (data[pos + 1] << 8)) % 8192);
  size_t split = size;
  if (pos + 2 <= size) {
    split = pos + 2 + (size_t)(data[pos] | (data[pos + 1] << 8));
    pos += 2;
  }
  if (split > size) split = size;
  if (split < pos) split = pos;

  std::vector<Socket> dataConns;
  std::vector<Socket> raw;
  for (int i = 0; i < nsocks; ++i) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return 0;
    dataConns.emplace_back(sv[0]);
    raw.emplace_back(sv[1]);
  }
  int cv[2];  // the control connection; its far end stays open and silent
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, cv) != 0) return 0;
  std::vector<Socket> control(2);
  control[1] = Socket(cv[0]);
  Socket controlPeer(cv[1]);
  std::vector<std::unique_ptr<Connection>> conns(2);
  conns[1].reset(new SocketConnection(1, std::move(dataConns), 4096));
  ProxyParams params;
  params.rank = 0;
  params.nranks = 2;
  params.spinUs = 0;
  params.peerNames = {"rank 0", "rank 1"};
  Health health;
  Proxy proxy(params, health, std::move(control), std::move(conns));
  if (proxy.start() != mixcclSuccess) return 0;

  std::vector<std::unique_ptr<uint8_t[]>> bufs;
  std::deque<TransportRequest> ops;
  for (size_t n : sizes) {
    bufs.emplace_back(new uint8_t[n ? n : 1]);
    ops.emplace_back(TransportRequest::Kind::Recv, 1, bufs.back().get(), n);
    proxy.post(&ops.back());
  }
  static uint8_t outgoing[3000];
  if (postSend) {
    ops.emplace_back(TransportRequest::Kind::Send, 1, outgoing, sizeof(outgoing));
    proxy.post(&ops.back());
  }
  // The stream; the socket buffers hold far more than libFuzzer's inputs, so this never blocks.
  const uint8_t* parts[2] = {data + pos, data + split};
  size_t lens[2] = {split - pos, size - split};
  for (int i = 0; i < nsocks; ++i) {
    size_t len = (i == 0 && nsocks == 1) ? size - pos : lens[i];
    const uint8_t* p = (i == 0 && nsocks == 1) ? data + pos : parts[i];
    if (len) send(raw[i].fd(), p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
    ::shutdown(raw[i].fd(), SHUT_WR);
  }
  // A frame for a receive that was never posted leaves its connection paused, so its end is
  // noticed only by the deadline: keep it short.
  Deadline deadline = Deadline::afterSeconds(0.01);
  for (TransportRequest& op : ops) {
    Result r = proxy.wait(&op, deadline);
    if (op.stateNow() == TransportRequest::Pending) abort();  // wait returned with the op unfinished
    if (r == mixcclSuccess && op.kind == TransportRequest::Kind::Recv && op.done != op.bytes) abort();
  }
  return 0;
}
