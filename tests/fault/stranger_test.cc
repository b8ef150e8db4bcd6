// Strangers at the rendezvous root: random bytes, a silent connection, a wrong secret (both a
// client that does not know it and a forged proof), a replayed handshake, a truncated hello,
// a flood of idle connections. None of them gets in: the root's own counts
// (rootConnectionCounts) show each talking stranger refused before any rank starts, the silent
// ones cut when the rendezvous completes, and exactly the ranks admitted; the real job still
// completes with correct results and without delay (the root serves every handshake at once).
// flood_test.cc floods the root and a rank's listener with thousands.
#include <gtest/gtest.h>
#include <openssl/rand.h>

#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/auth.h"
#include "bootstrap/root.h"
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

// Waits until the roots of this process have refused `want` connections in all (counted from
// process start) and returns whether they did within seconds.
bool refusedWithin(uint64_t want, double seconds) {
  double end = now() + seconds;
  while (rootConnectionCounts().refused < want && now() < end) usleep(2000);
  return rootConnectionCounts().refused >= want;
}

// A stranger that talks: connect, run body on the connection, then the root must refuse it
// (its refused count goes up by exactly one, nobody is admitted) and close the connection, all
// before any rank has started, so that the end of the rendezvous cannot be what threw it out.
void refusedStranger(const SocketAddress& addr, const char* name, StrangerLog* log,
                     const std::function<bool(const Socket&)>& body) {
  RootConnectionCounts before = rootConnectionCounts();
  Socket s;
  if (connectBefore(addr, Deadline::afterSeconds(5), &s) != mixcclSuccess)
    return log->fail(std::string(name) + ": could not connect to the root");
  if (!body(s)) return;  // body logged why
  if (!refusedWithin(before.refused + 1, 3))
    log->fail(std::string(name) + ": the root did not refuse it");
  if (!closedWithin(s, 3)) log->fail(std::string(name) + ": the root kept the connection open");
  RootConnectionCounts after = rootConnectionCounts();
  if (after.refused != before.refused + 1 || after.admitted != before.admitted ||
      after.dropped != before.dropped || after.cut != before.cut)
    log->fail(std::string(name) + ": counts moved by refused " +
              std::to_string(after.refused - before.refused) + ", admitted " +
              std::to_string(after.admitted - before.admitted) + ", dropped " +
              std::to_string(after.dropped - before.dropped) + ", cut " +
              std::to_string(after.cut - before.cut) + "; expected 1, 0, 0, 0");
}

// Every stranger that talks, one after the other, each refused before the next.
void runTalkingStrangers(const SocketAddress& addr, const Secret& secret, StrangerLog* log) {
  refusedStranger(addr, "random bytes", log, [&](const Socket& s) {
    auto junk = randomBuffer(64 << 10);
    send(s.fd(), junk.data(), junk.size(), MSG_NOSIGNAL);
    return true;
  });
  refusedStranger(addr, "wrong secret", log, [&](const Socket& s) {
    // A client that does not know the secret refuses the root, and the root refuses it.
    Secret wrong = secret;
    wrong.bytes[0] ^= 1;
    if (authenticateClient(s, wrong, Deadline::afterSeconds(5), "root") == mixcclSuccess) {
      log->fail("wrong secret: the handshake succeeded");
      return false;
    }
    // It hangs up, as a client that gave up does; the root must then refuse it at once.
    ::shutdown(s.fd(), SHUT_WR);
    return true;
  });
  refusedStranger(addr, "forged proof", log, [&](const Socket& s) {
    auto hello = recordLegitimateClient(secret);  // a well-formed hello with a fresh nonce
    if (hello.size() < 56) {
      log->fail("forged proof: could not record a handshake");
      return false;
    }
    send(s.fd(), hello.data(), 24, MSG_NOSIGNAL);
    char challenge[56];
    if (recvAllBefore(s, challenge, sizeof(challenge), Deadline::afterSeconds(5), "root") !=
        mixcclSuccess) {
      log->fail("forged proof: no challenge from the root");
      return false;
    }
    auto proof = randomBuffer(32);
    send(s.fd(), proof.data(), proof.size(), MSG_NOSIGNAL);
    return true;
  });
  auto recorded = recordLegitimateClient(secret);
  refusedStranger(addr, "replayed handshake", log, [&](const Socket& s) {
    if (recorded.size() < 56) {
      log->fail("replay: could not record a handshake");
      return false;
    }
    send(s.fd(), recorded.data(), 24, MSG_NOSIGNAL);
    char challenge[56];
    if (recvAllBefore(s, challenge, sizeof(challenge), Deadline::afterSeconds(5), "root") !=
        mixcclSuccess) {
      log->fail("replay: no challenge from the root");
      return false;
    }
    // The proof answers another challenge; a rank hello would follow if the root accepted it.
    send(s.fd(), recorded.data() + 24, 32, MSG_NOSIGNAL);
    return true;
  });
}

// Strangers that stay silent: a flood of idle connections and half a hello. The root must
// hold them (in their handshake, none admitted) without delaying the ranks, and drop them when
// the rendezvous completes.
void startSilentStrangers(const SocketAddress& addr, const Secret& secret, StrangerLog* log,
                          std::vector<std::thread>* threads, std::vector<Socket>* idle) {
  Deadline d = Deadline::afterSeconds(5);
  for (int i = 0; i < 20; ++i) {
    Socket s;
    if (connectBefore(addr, d, &s) != mixcclSuccess) return log->fail("idle: could not connect");
    idle->push_back(std::move(s));
  }
  auto recorded = recordLegitimateClient(secret);
  threads->emplace_back([=] {
    Socket s;
    if (connectBefore(addr, Deadline::afterSeconds(5), &s) != mixcclSuccess)
      return log->fail("truncated hello: could not connect to the root");
    send(s.fd(), recorded.data(), 10, MSG_NOSIGNAL);
    if (!closedWithin(s, 8)) log->fail("truncated hello: never dropped");
  });
}

TEST(Strangers, RootRefusesThemAndTheJobCompletes) {
  const int n = 4;
  const size_t count = 100000;
  const int kTalking = 4, kSilent = 21;  // runTalkingStrangers, startSilentStrangers
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
  const RootConnectionCounts start = rootConnectionCounts();
  StrangerLog log;
  runTalkingStrangers(root, secretOf(job.id()), &log);
  std::vector<std::thread> threads;
  std::vector<Socket> idle;
  startSilentStrangers(root, secretOf(job.id()), &log, &threads, &idle);
  // Every stranger is at the root before any rank: all accepted, the silent ones waiting.
  double until = now() + 5;
  while (rootConnectionCounts().accepted < start.accepted + kTalking + kSilent && now() < until)
    usleep(2000);
  RootConnectionCounts before = rootConnectionCounts();
  EXPECT_EQ(before.accepted - start.accepted, (uint64_t)(kTalking + kSilent));
  EXPECT_EQ(before.refused - start.refused, (uint64_t)kTalking);
  EXPECT_EQ(before.admitted, start.admitted);
  EXPECT_EQ(before.dropped, start.dropped);
  EXPECT_EQ(before.cut, start.cut);
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
  // Exactly the ranks got in and nobody else was refused; the silent strangers were cut at the
  // end, or dropped before it if the rendezvous took longer than their handshake bound (3 s:
  // only on a very slow machine).
  RootConnectionCounts end = rootConnectionCounts();
  EXPECT_EQ(end.accepted - start.accepted, (uint64_t)(kTalking + kSilent + n));
  EXPECT_EQ(end.admitted - start.admitted, (uint64_t)n);
  EXPECT_EQ(end.refused - start.refused, (uint64_t)kTalking);
  EXPECT_EQ(end.cut - start.cut + end.dropped - start.dropped, (uint64_t)kSilent);
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
