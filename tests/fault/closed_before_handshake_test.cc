// A rank whose connection is closed (or reset) before its handshake, by the root or by a peer's
// transport listener (as one flooded by strangers does: flood_test.cc), connects again and gets
// in within its init deadline.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "base/error.h"
#include "bootstrap/interfaces.h"
#include "bootstrap/peer_info.h"
#include "bootstrap/socket.h"
#include "bootstrap/unique_id.h"
#include "fault_harness.h"
#include "transport/socket_mesh.h"

namespace {

using fault::now;
using namespace mixccl;

const int kEnvTimeoutS = [] {
  setenv("MIXCCL_TIMEOUT_S", "20", 1);
  return 20;
}();

// A TCP relay in front of a listener: it closes the first `drop` connections before a byte is
// exchanged (every other one with a reset instead of an orderly close), then forwards the
// others both ways. Stands for a root or a listener that evicted the connection. It listens at
// once and serves from start() on: a test that forks starts it after the fork (a child forked
// while the relay's thread holds the allocator's lock would hang on it).
class ClosingRelay {
 public:
  ClosingRelay(const SocketAddress& target, int drop) : target_(target), drop_(drop) {
    SocketAddress any = target;
    if (any.family() == AF_INET) reinterpret_cast<sockaddr_in*>(any.sa())->sin_port = 0;
    else reinterpret_cast<sockaddr_in6*>(any.sa())->sin6_port = 0;
    ok_ = listenOn(any, &listener_, &bound_) == mixcclSuccess;
  }
  void start() {
    if (ok_) thread_ = std::thread([this] { loop(); });
  }
  ~ClosingRelay() {
    stop_.store(true);
    if (thread_.joinable()) thread_.join();
  }
  bool ok() const { return ok_; }
  const SocketAddress& address() const { return bound_; }
  int accepted() const { return accepted_.load(); }

 private:
  void loop() {
    std::vector<std::pair<Socket, Socket>> pairs;
    while (!stop_.load()) {
      std::vector<pollfd> fds{{listener_.fd(), POLLIN, 0}};
      for (auto& pr : pairs) {
        fds.push_back({pr.first.fd(), POLLIN, 0});
        fds.push_back({pr.second.fd(), POLLIN, 0});
      }
      if (poll(fds.data(), fds.size(), 20) <= 0) continue;
      for (size_t i = 1; i < fds.size(); ++i) {
        if (!fds[i].revents) continue;
        auto& pr = pairs[(i - 1) / 2];
        const Socket& from = i % 2 ? pr.first : pr.second;
        const Socket& to = i % 2 ? pr.second : pr.first;
        if (!from.valid() || !to.valid()) continue;
        char buf[65536];
        ssize_t k = recv(from.fd(), buf, sizeof(buf), MSG_DONTWAIT);
        if (k > 0 &&
            sendAllBefore(to, buf, (size_t)k, Deadline::afterSeconds(5), "relay") == mixcclSuccess)
          continue;
        if (k < 0 && (errno == EAGAIN || errno == EINTR)) continue;
        pr.first.close();
        pr.second.close();
      }
      pairs.erase(std::remove_if(pairs.begin(), pairs.end(),
                                 [](const std::pair<Socket, Socket>& pr) {
                                   return !pr.first.valid();
                                 }),
                  pairs.end());
      if (fds[0].revents) {
        int fd = accept4(listener_.fd(), nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) continue;
        Socket in(fd);
        int n = ++accepted_;
        if (n <= drop_) {
          if (n % 2 == 0) {
            linger reset{1, 0};
            setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof(reset));
          }
          continue;  // closed (or reset) here, before the peer heard anything
        }
        Socket out;
        if (connectBefore(target_, Deadline::afterSeconds(5), &out) != mixcclSuccess) continue;
        pairs.emplace_back(std::move(in), std::move(out));
      }
    }
  }

  SocketAddress target_;
  int drop_;
  Socket listener_;
  SocketAddress bound_;
  bool ok_ = false;
  std::atomic<bool> stop_{false};
  std::atomic<int> accepted_{0};
  std::thread thread_;
};

// The root (through the relay) closes the first two rendezvous connections before their
// handshake, once with a reset: both ranks connect again and the job starts.
TEST(Flood, ARankWhoseRendezvousConnectionIsClosedBeforeItsHandshakeRetries) {
  const int n = 2;
  fault::Job job(n, 30);
  ASSERT_TRUE(job.ok());
  UniqueIdData id;
  ASSERT_EQ(decodeUniqueId(job.id(), &id), mixcclSuccess);
  SocketAddress root;
  ASSERT_EQ(fromWire(id.root, &root), mixcclSuccess);
  ClosingRelay relay(root, 2);
  ASSERT_TRUE(relay.ok());
  id.root = toWire(relay.address());
  mixcclUniqueId viaRelay;
  encodeUniqueId(id, &viaRelay);
  job.start([&](const mixcclUniqueId&, int rank, int nranks, fault::Shared* sh) {
    mixcclComm_t comm;
    double t0 = now();
    mixcclResult_t r = mixcclCommInitRank(&comm, nranks, viaRelay, rank);
    sh->ranks[rank].laterSeconds = now() - t0;
    fault::copyMessage(&sh->ranks[rank], r == mixcclSuccess ? "" : mixcclGetLastError(nullptr));
    if (r != mixcclSuccess) return 3;
    float v = 1;
    if (mixcclAllReduce(&v, &v, 1, mixcclFloat, mixcclSum, comm, nullptr) != mixcclSuccess ||
        v != nranks)
      return 4;
    return mixcclCommDestroy(comm) == mixcclSuccess ? 0 : 5;
  });
  relay.start();
  ASSERT_TRUE(job.waitExit());
  for (int r = 0; r < n; ++r) {
    fprintf(stderr, "rank %d: init took %.3f s through the relay\n", r, job.report(r).laterSeconds);
    EXPECT_EQ(job.exitCode(r), 0) << "rank " << r << ": " << job.report(r).message;
    EXPECT_LT(job.report(r).laterSeconds, 3.0) << "rank " << r;
  }
  EXPECT_EQ(relay.accepted(), 4) << "two closed connections, then one per rank";
  EXPECT_TRUE(fault::Job::noChildrenLeft());
}

// A peer's listener (through the relay) closes rank 1's first two transport connections before
// their handshake: rank 1 connects again and the mesh completes.
TEST(Flood, ARankWhoseMeshConnectionIsClosedBeforeItsHandshakeRetries) {
  SocketAddress lo;
  ASSERT_EQ(parseHostPort("127.0.0.1:0", &lo), mixcclSuccess);
  Secret secret;
  memset(&secret, 0x42, sizeof(secret));
  Socket listeners[2];
  std::vector<PeerInfo> peers(2);
  MeshParams params[2];
  for (int r = 0; r < 2; ++r) {
    SocketAddress bound;
    ASSERT_EQ(listenOn(lo, &listeners[r], &bound), mixcclSuccess);
    fillLocalHostInfo(&peers[r]);
    peers[r].rank = r;
    peers[r].listenAddr = toWire(bound);
    params[r] = MeshParams{r, 2, 0, 0x1234, secret};
  }
  SocketAddress rank0;
  ASSERT_EQ(fromWire(peers[0].listenAddr, &rank0), mixcclSuccess);
  ClosingRelay relay(rank0, 2);
  ASSERT_TRUE(relay.ok());
  relay.start();
  std::vector<PeerInfo> seenByRank1 = peers;
  seenByRank1[0].listenAddr = toWire(relay.address());
  Deadline deadline = Deadline::afterSeconds(10);
  Result r0 = mixcclInternalError, r1 = mixcclInternalError;
  std::vector<std::vector<Socket>> c0, c1;
  std::string why1;
  double t0 = now();
  std::thread a([&] { r0 = connectMesh(listeners[0], params[0], peers, deadline, &c0); });
  std::thread b([&] {
    r1 = connectMesh(listeners[1], params[1], seenByRank1, deadline, &c1);
    why1 = threadLastError();
  });
  a.join();
  b.join();
  double took = now() - t0;
  fprintf(stderr, "the mesh took %.3f s through the relay\n", took);
  EXPECT_EQ(r0, mixcclSuccess);
  EXPECT_EQ(r1, mixcclSuccess) << why1;
  EXPECT_LT(took, 3.0);
  // Same host: the control connection and one data connection, each closed once.
  EXPECT_EQ(relay.accepted(), 4);
  ASSERT_EQ(c1.size(), 2u);
  ASSERT_EQ(c1[0].size(), 2u);
  char ping = 'x', got = 0;
  ASSERT_EQ(sendAllBefore(c1[0][1], &ping, 1, Deadline::afterSeconds(5), "rank 0"), mixcclSuccess);
  ASSERT_EQ(recvAllBefore(c0[1][1], &got, 1, Deadline::afterSeconds(5), "rank 1"), mixcclSuccess);
  EXPECT_EQ(got, 'x');
}

}  // namespace
