// Strangers at the rendezvous root: random bytes, a silent connection, a wrong secret (both a
// client that does not know it and a forged proof), a replayed handshake, a truncated hello,
// a flood of idle connections. None of them gets in, and the real job still completes with
// correct results and without delay (the root handles handshakes concurrently).
#include <gtest/gtest.h>
#include <openssl/rand.h>

#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/auth.h"
#include "bootstrap/socket.h"
#include "bootstrap/unique_id.h"
#include "fault_harness.h"

namespace {

using fault::Job;
using fault::now;
using fault::Shared;
using namespace mixccl;

const int kEnvTimeoutS = [] {
  setenv("MIXCCL_TIMEOUT_S", "20", 1);
  return 20;
}();

SocketAddress rootOf(const mixcclUniqueId& uid) {
  UniqueIdData id;
  SocketAddress a;
  if (decodeUniqueId(uid, &id) == mixcclSuccess) fromWire(id.root, &a);
  return a;
}

Secret secretOf(const mixcclUniqueId& uid) {
  UniqueIdData id;
  decodeUniqueId(uid, &id);
  return id.secret;
}

std::vector<uint8_t> randomBuffer(size_t n) {
  std::vector<uint8_t> b(n);
  RAND_bytes(b.data(), (int)n);
  return b;
}

// True once the peer closed the connection (recv returns 0 or an error) within seconds.
bool closedWithin(const Socket& s, double seconds) {
  char buf[4096];
  double end = now() + seconds;
  while (now() < end) {
    ssize_t k = recv(s.fd(), buf, sizeof(buf), MSG_DONTWAIT);
    if (k == 0 || (k < 0 && errno != EAGAIN && errno != EINTR)) return true;
    usleep(2000);
  }
  return false;
}

// Records what a legitimate client sends in one handshake with the right secret (against our
// own server on a socket pair relayed through this thread), for replaying to the real root.
std::vector<uint8_t> recordLegitimateClient(const Secret& secret) {
  int a[2], b[2];
  socketpair(AF_UNIX, SOCK_STREAM, 0, a);
  socketpair(AF_UNIX, SOCK_STREAM, 0, b);
  Socket clientEnd(a[0]), relayClient(a[1]), relayServer(b[0]), serverEnd(b[1]);
  std::thread server([&] {
    authenticateServer(serverEnd, secret, Deadline::afterSeconds(5), "decoy client");
  });
  std::thread client([&] {
    authenticateClient(clientEnd, secret, Deadline::afterSeconds(5), "decoy server");
  });
  std::vector<uint8_t> recorded;
  // Relay both ways until both sides are done (client sends 24 + 32 bytes).
  double end = now() + 5;
  while (now() < end && recorded.size() < 56) {
    char buf[256];
    ssize_t k = recv(relayClient.fd(), buf, sizeof(buf), MSG_DONTWAIT);
    if (k > 0) {
      recorded.insert(recorded.end(), buf, buf + k);
      send(relayServer.fd(), buf, (size_t)k, MSG_NOSIGNAL);
    }
    k = recv(relayServer.fd(), buf, sizeof(buf), MSG_DONTWAIT);
    if (k > 0) send(relayClient.fd(), buf, (size_t)k, MSG_NOSIGNAL);
    usleep(500);
  }
  client.join();
  server.join();
  return recorded;
}

struct StrangerLog {
  std::mutex m;
  std::vector<std::string> failures;
  void fail(const std::string& s) {
    std::lock_guard<std::mutex> lock(m);
    failures.push_back(s);
  }
};

// Runs every kind of stranger against addr; each checks it was refused.
void runStrangers(const SocketAddress& addr, const Secret& secret, StrangerLog* log,
                  std::vector<std::thread>* threads, std::vector<Socket>* idle) {
  Deadline d = Deadline::afterSeconds(5);
  // A flood of connections that say nothing and stay open.
  for (int i = 0; i < 20; ++i) {
    Socket s;
    if (connectBefore(addr, d, &s) == mixcclSuccess) idle->push_back(std::move(s));
  }
  threads->emplace_back([=] {  // random bytes, then waits to be thrown out
    Socket s;
    if (connectBefore(addr, Deadline::afterSeconds(5), &s) != mixcclSuccess) return;
    auto junk = randomBuffer(64 << 10);
    send(s.fd(), junk.data(), junk.size(), MSG_NOSIGNAL);
    if (!closedWithin(s, 3)) log->fail("random bytes: the root kept the connection open");
  });
  threads->emplace_back([=] {  // a client without the secret: it must refuse the root
    Secret wrong = secret;
    wrong.bytes[0] ^= 1;
    Socket s;
    if (connectBefore(addr, Deadline::afterSeconds(5), &s) != mixcclSuccess) return;
    if (authenticateClient(s, wrong, Deadline::afterSeconds(5), "root") == mixcclSuccess)
      log->fail("wrong secret: the handshake succeeded");
  });
  threads->emplace_back([=] {  // a forged proof after a proper hello
    Socket s;
    if (connectBefore(addr, Deadline::afterSeconds(5), &s) != mixcclSuccess) return;
    auto hello = recordLegitimateClient(secret);  // a well-formed hello with a fresh nonce
    if (hello.size() < 56) return log->fail("could not record a handshake");
    send(s.fd(), hello.data(), 24, MSG_NOSIGNAL);
    char challenge[56];
    if (recvAllBefore(s, challenge, sizeof(challenge), Deadline::afterSeconds(5), "root") !=
        mixcclSuccess)
      return log->fail("forged proof: no challenge from the root");
    auto proof = randomBuffer(32);
    send(s.fd(), proof.data(), proof.size(), MSG_NOSIGNAL);
    if (!closedWithin(s, 3)) log->fail("forged proof: the root kept the connection open");
  });
  threads->emplace_back([=] {  // a recorded legitimate handshake, replayed
    auto recorded = recordLegitimateClient(secret);
    if (recorded.size() < 56) return log->fail("could not record a handshake");
    Socket s;
    if (connectBefore(addr, Deadline::afterSeconds(5), &s) != mixcclSuccess) return;
    send(s.fd(), recorded.data(), 24, MSG_NOSIGNAL);
    char challenge[56];
    if (recvAllBefore(s, challenge, sizeof(challenge), Deadline::afterSeconds(5), "root") !=
        mixcclSuccess)
      return log->fail("replay: no challenge from the root");
    send(s.fd(), recorded.data() + 24, 32, MSG_NOSIGNAL);
    // A rank hello would follow; the root must have closed the connection instead.
    if (!closedWithin(s, 3)) log->fail("replay: the root accepted a replayed handshake");
  });
  threads->emplace_back([=] {  // half a hello, then silence
    Socket s;
    if (connectBefore(addr, Deadline::afterSeconds(5), &s) != mixcclSuccess) return;
    auto recorded = recordLegitimateClient(secret);
    send(s.fd(), recorded.data(), 10, MSG_NOSIGNAL);
    if (!closedWithin(s, 8)) log->fail("truncated hello: never dropped");
  });
}

TEST(Strangers, RootRefusesThemAndTheJobCompletes) {
  const int n = 4;
  const size_t count = 100000;
  Job job(n, 60);
  ASSERT_TRUE(job.ok());
  SocketAddress root = rootOf(job.id());
  ASSERT_TRUE(root.valid());
  // Ranks start after the strangers are in.
  job.start([&](const mixcclUniqueId& id, int rank, int nranks, Shared* sh) {
    while (sh->injectedAt == 0) usleep(1000);
    double t0 = now();
    mixcclComm_t comm;
    if (mixcclCommInitRank(&comm, nranks, id, rank) != mixcclSuccess) return 3;
    sh->ranks[rank].failedAt = now() - t0;
    std::vector<double> buf(count);
    for (size_t i = 0; i < count; ++i) buf[i] = rank + i;
    if (mixcclAllReduce(buf.data(), buf.data(), count, mixcclDouble, mixcclSum, comm, nullptr) !=
        mixcclSuccess)
      return 4;
    for (size_t i = 0; i < count; ++i)
      if (buf[i] != nranks * (nranks - 1) / 2.0 + nranks * (double)i) return 5;
    return mixcclCommDestroy(comm) == mixcclSuccess ? 0 : 6;
  });
  StrangerLog log;
  std::vector<std::thread> threads;
  std::vector<Socket> idle;
  runStrangers(root, secretOf(job.id()), &log, &threads, &idle);
  fault::sleepSeconds(0.2);  // the strangers' bytes are at the root before any rank
  job.shared()->injectedAt = now();
  ASSERT_TRUE(job.waitExit());
  for (auto& t : threads) t.join();
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(job.exitCode(r), 0) << "rank " << r;
    fprintf(stderr, "rank %d: init took %.3f s with strangers at the root\n", r,
            job.report(r).failedAt);
    // A silent stranger costs a sequential root 5 s per connection; these run concurrently.
    EXPECT_LT(job.report(r).failedAt, 2.0) << "rank " << r << " was delayed by strangers";
  }
  for (const std::string& f : log.failures) ADD_FAILURE() << f;
  // The idle connections were dropped when the rendezvous completed.
  for (Socket& s : idle) EXPECT_TRUE(closedWithin(s, 2)) << "an idle stranger was kept";
  EXPECT_TRUE(Job::noChildrenLeft());
}

// The handshake on its own: a peer with the wrong secret is refused on both sides, and the
// secret never crosses the wire (nothing sent contains it).
TEST(Strangers, HandshakeNeverSendsTheSecretAndRefusesAWrongOne) {
  Secret secret;
  randomBytes(&secret, sizeof(secret));
  auto recorded = recordLegitimateClient(secret);
  ASSERT_EQ(recorded.size(), 56u);
  auto it = std::search(recorded.begin(), recorded.end(), secret.bytes, secret.bytes + 16);
  EXPECT_EQ(it, recorded.end());
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  Socket a(sv[0]), b(sv[1]);
  Secret wrong = secret;
  wrong.bytes[15] ^= 0x80;
  Result serverResult = mixcclSuccess;
  std::thread server([&] {
    serverResult = authenticateServer(b, secret, Deadline::afterSeconds(3), "test client");
  });
  Result clientResult = authenticateClient(a, wrong, Deadline::afterSeconds(3), "test server");
  a.shutdown();
  server.join();
  EXPECT_EQ(clientResult, mixcclRemoteError);
  EXPECT_NE(serverResult, mixcclSuccess);
}

}  // namespace
