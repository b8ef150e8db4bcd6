// The transport mesh: ranks connect and authenticate; a stranger at a rank's listener (silent
// or with a wrong secret) neither counts nor holds up the real connections.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "bootstrap/interfaces.h"
#include "bootstrap/peer_info.h"
#include "bootstrap/socket.h"
#include "transport/socket_mesh.h"

namespace mixccl {
namespace {

struct TwoRanks {
  Socket listeners[2];
  std::vector<PeerInfo> peers = std::vector<PeerInfo>(2);
  MeshParams params[2];

  TwoRanks() {
    SocketAddress lo;
    EXPECT_EQ(parseHostPort("127.0.0.1:0", &lo), mixcclSuccess);
    Secret secret;
    memset(&secret, 0x42, sizeof(secret));
    for (int r = 0; r < 2; ++r) {
      SocketAddress bound;
      EXPECT_EQ(listenOn(lo, &listeners[r], &bound), mixcclSuccess);
      fillLocalHostInfo(&peers[r]);
      peers[r].rank = r;
      peers[r].listenAddr = toWire(bound);
      params[r] = MeshParams{r, 2, 0, 0x1234, secret};
    }
  }

  // Runs both ranks' connectMesh; returns the seconds it took.
  double connect(Result* r0, Result* r1, std::vector<std::vector<Socket>>* c0,
                 std::vector<std::vector<Socket>>* c1) {
    Deadline deadline = Deadline::afterSeconds(20);
    auto start = std::chrono::steady_clock::now();
    std::thread t0([&] { *r0 = connectMesh(listeners[0], params[0], peers, deadline, c0); });
    std::thread t1([&] { *r1 = connectMesh(listeners[1], params[1], peers, deadline, c1); });
    t0.join();
    t1.join();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
};

TEST(SocketMesh, SilentAndWrongSecretStrangersDoNotDelayRanks) {
  TwoRanks job;
  SocketAddress target;
  ASSERT_EQ(fromWire(job.peers[0].listenAddr, &target), mixcclSuccess);
  // A silent stranger connects first and says nothing; another presents a wrong secret.
  Socket silent, wrong;
  ASSERT_EQ(connectBefore(target, Deadline::afterSeconds(5), &silent), mixcclSuccess);
  ASSERT_EQ(connectBefore(target, Deadline::afterSeconds(5), &wrong), mixcclSuccess);
  std::thread impostor([&] {
    Secret bad;
    memset(&bad, 0x13, sizeof(bad));
    EXPECT_NE(authenticateClient(wrong, bad, Deadline::afterSeconds(5), "rank 0"), mixcclSuccess);
  });
  Result r0 = mixcclInternalError, r1 = mixcclInternalError;
  std::vector<std::vector<Socket>> c0, c1;
  double took = job.connect(&r0, &r1, &c0, &c1);
  impostor.join();
  EXPECT_EQ(r0, mixcclSuccess);
  EXPECT_EQ(r1, mixcclSuccess);
  EXPECT_LT(took, 2.0) << "a handshake with a stranger held up the mesh";
  ASSERT_EQ(c0[1].size(), 2u);  // same host: the control connection and one data connection
  EXPECT_TRUE(c0[1][0].valid());
  EXPECT_TRUE(c1[0][0].valid());
  // The two ends are connected to each other.
  char ping = 'x', got = 0;
  ASSERT_EQ(sendAllBefore(c1[0][0], &ping, 1, Deadline::afterSeconds(5), "rank 0"), mixcclSuccess);
  ASSERT_EQ(recvAllBefore(c0[1][0], &got, 1, Deadline::afterSeconds(5), "rank 1"), mixcclSuccess);
  EXPECT_EQ(got, 'x');
}

TEST(SocketMesh, ExplicitConnectionCountIsHonoured) {
  TwoRanks job;
  job.params[0].nsocks = job.params[1].nsocks = 3;
  Result r0 = mixcclInternalError, r1 = mixcclInternalError;
  std::vector<std::vector<Socket>> c0, c1;
  job.connect(&r0, &r1, &c0, &c1);
  ASSERT_EQ(r0, mixcclSuccess);
  ASSERT_EQ(r1, mixcclSuccess);
  ASSERT_EQ(c0[1].size(), 4u);  // control + 3 data connections
  for (const Socket& s : c0[1]) EXPECT_TRUE(s.valid());
}

}  // namespace
}  // namespace mixccl
