// The harness of the proxy-over-transport tests (proxy_transport_harness.h): the pairs over each
// transport, the exposed proxy and the checked traffic.
#include "proxy_transport_harness.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <deque>
#include <thread>

#include "base/clock.h"
#include "bootstrap/peer_info.h"
#include "transport/shm_connection.h"
#include "transport/socket_connection.h"
#ifdef MIXCCL_TEST_HAVE_UCX
#include "transport/ucx/ucx_transport.h"
#endif
#ifdef MIXCCL_HAVE_OFI
#include "transport/ofi/ofi_connection.h"
#include "transport/ofi/ofi_transport.h"
#endif

namespace mixccl {
namespace proxytest {

namespace {

const bool kQuiet = [] {
  setenv("MIXCCL_DEBUG", "NONE", 0);
  setenv("MIXCCL_TIMEOUT_S", "20", 1);
  return true;
}();

// The byte at i of message msg from rank `from`.
uint8_t pattern(int from, int msg, size_t i) { return (uint8_t)(from * 131 + msg * 31 + i * 7); }

// Rank `me` of the pair sends and receives messages of many sizes, all in flight together in
// batches, from its own thread, and checks every received byte.
void traffic(Proxy& proxy, int me, int messages, std::atomic<int>* bad) {
  const int peer = 1 - me;
  const size_t sizes[] = {0, 1, 7, 4096, 65536, 65537, 300000, 1 << 20};
  for (int base = 0; base < messages; base += 8) {
    std::vector<std::vector<uint8_t>> out, in;
    std::deque<TransportRequest> ops;
    for (int m = base; m < base + 8 && m < messages; ++m) {
      size_t n = sizes[(m * 5 + me) % 8];
      size_t nIn = sizes[(m * 5 + peer) % 8];
      out.emplace_back(n);
      for (size_t i = 0; i < n; ++i) out.back()[i] = pattern(me, m, i);
      in.emplace_back(nIn + 1, 0xEE);  // one guard byte past the message
      ops.emplace_back(TransportRequest::Kind::Send, peer, out.back().data(), n);
      proxy.post(&ops.back());
      ops.emplace_back(TransportRequest::Kind::Recv, peer, in.back().data(), nIn);
      proxy.post(&ops.back());
    }
    Deadline d = Deadline::afterSeconds(20);
    for (TransportRequest& op : ops)
      if (proxy.wait(&op, d) != mixcclSuccess) bad->fetch_add(1);
    for (size_t k = 0; k < in.size(); ++k) {
      int m = base + (int)k;
      size_t nIn = in[k].size() - 1;
      for (size_t i = 0; i < nIn; ++i)
        if (in[k][i] != pattern(peer, m, i)) {
          bad->fetch_add(1);
          break;
        }
      if (in[k][nIn] != 0xEE) bad->fetch_add(1);
    }
  }
}

}  // namespace

double fault_now() {
  return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
}

ProxyParams params(int rank) {
  ProxyParams p;
  p.rank = rank;
  p.nranks = 2;
  p.spinUs = 20;
  p.peerNames = {"rank 0 (test)", "rank 1 (test)"};
  return p;
}

void connectedPair(Socket* a, Socket* b) {
  int sv[2];
  EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  *a = Socket(sv[0]);
  *b = Socket(sv[1]);
}

std::string transportNameOf(const std::string& transport) {
  return transport.compare(0, 4, "ofi_") == 0 ? "ofi" : transport;
}

std::string transportParamName(const ::testing::TestParamInfo<const char*>& info) {
  return std::string(info.param);
}

std::string gLastOfiAddress;

void makeConnections(const std::string& transport, int nsocks, size_t frameBytes,
                     Socket* control,
                     std::vector<std::vector<std::unique_ptr<Connection>>>* out) {
  std::vector<std::vector<std::vector<Socket>>> conns(2);
  for (auto& c : conns) c.resize(2);
  for (int i = 0; i <= nsocks; ++i) {
    conns[0][1].emplace_back();
    conns[1][0].emplace_back();
    connectedPair(&conns[0][1].back(), &conns[1][0].back());
  }
  std::vector<PeerInfo> peers(2);
  for (int r = 0; r < 2; ++r) {
    fillLocalHostInfo(&peers[r]);
    peers[r].rank = r;
  }
  uint64_t commHash = 0x7e57000000000000ull ^ (uint64_t)getpid() ^ ((uint64_t)rand() << 16);
  Result rc[2];
  std::thread sides[2];
  for (int r = 0; r < 2; ++r)
    sides[r] = std::thread([&, r] {
      std::unique_ptr<Transport> t;
      if (transport == "shm") {
        ShmParams sp;
        sp.rank = r;
        sp.nranks = 2;
        sp.commHash = commHash;
        sp.ringBytes = 1 << 16;  // small rings: the traffic wraps them many times
        t.reset(new ShmTransport(sp, true));
#ifdef MIXCCL_TEST_HAVE_UCX
      } else if (transport == "ucx") {
        // The handshake travels over the control connection (conns[r][1 - r][0]).
        std::vector<bool> serve(2, false);
        serve[1 - r] = true;
        t.reset(new UcxTransport(serve));
#endif
#ifdef MIXCCL_HAVE_OFI
      } else if (transport == "ofi_tcp" || transport == "ofi_shm") {
        std::vector<bool> serve(2, false);
        serve[1 - r] = true;
        t.reset(new OfiTransport(transport == "ofi_tcp" ? "tcp;ofi_rxm" : "shm", serve));
#endif
      } else {
        t.reset(new SocketTransport());
      }
      TransportSetup setup;
      setup.rank = r;
      setup.nranks = 2;
      setup.commHash = commHash;
      setup.peers = &peers;
      setup.conns = &conns[r];
      setup.deadline = Deadline::afterSeconds(10);
      setup.frameBytes = frameBytes;
      (*out)[r].resize(2);
      rc[r] = t->connect(setup, {1 - r}, &(*out)[r]);
    });
  for (auto& t : sides) t.join();
  ASSERT_EQ(rc[0], mixcclSuccess);
  ASSERT_EQ(rc[1], mixcclSuccess);
  ASSERT_TRUE((*out)[0][1] && (*out)[1][0]) << transport << " declined the pair";
  ASSERT_EQ((*out)[0][1]->transportName(), transportNameOf(transport));
#ifdef MIXCCL_HAVE_OFI
  if (auto* ofi = dynamic_cast<OfiConnection*>((*out)[0][1].get()))
    gLastOfiAddress = ofi->endpoint().address();
#endif
  for (int r = 0; r < 2; ++r) control[r] = std::move(conns[r][1 - r][0]);
}

std::unique_ptr<Pair> makePair(const std::string& transport, int nsocks, size_t frameBytes) {
  std::unique_ptr<Pair> p(new Pair);
  std::vector<Socket> control(2);
  std::vector<std::vector<std::unique_ptr<Connection>>> conns(2);
  makeConnections(transport, nsocks, frameBytes, control.data(), &conns);
  std::vector<Socket> c0(2), c1(2);
  c0[1] = std::move(control[0]);
  c1[0] = std::move(control[1]);
  p->p0.reset(new Proxy(params(0), p->h0, std::move(c0), std::move(conns[0])));
  p->p1.reset(new Proxy(params(1), p->h1, std::move(c1), std::move(conns[1])));
  EXPECT_EQ(p->p0->start(), mixcclSuccess);
  EXPECT_EQ(p->p1->start(), mixcclSuccess);
  EXPECT_EQ(p->p0->transportName(1), transportNameOf(transport));
  return p;
}

std::unique_ptr<Exposed> makeExposed() {
  std::unique_ptr<Exposed> e(new Exposed);
  Socket mine, myControl;
  connectedPair(&mine, &e->raw);
  connectedPair(&myControl, &e->control);
  std::vector<Socket> data;
  data.push_back(std::move(mine));
  std::vector<std::unique_ptr<Connection>> conns(2);
  conns[1].reset(new SocketConnection(1, std::move(data), 4096));
  std::vector<Socket> control(2);
  control[1] = std::move(myControl);
  e->proxy.reset(new Proxy(params(0), e->health, std::move(control), std::move(conns)));
  EXPECT_EQ(e->proxy->start(), mixcclSuccess);
  return e;
}

void trafficBothWays(Pair& p, int messages, std::atomic<int>* bad) {
  std::thread t0([&] { traffic(*p.p0, 0, messages, bad); });
  std::thread t1([&] { traffic(*p.p1, 1, messages, bad); });
  t0.join();
  t1.join();
}

}  // namespace proxytest
}  // namespace mixccl
