// The harness of the proxy-over-transport tests, in one process with threads only (so they also
// run under ThreadSanitizer, which does not support fork after threads): two proxies, ranks 0
// and 1 of one communicator, joined by a control connection and connections of a named
// transport (Pair, makeConnections, makePair); one proxy whose socket data connection is a raw
// socket the test writes (Exposed); and the traffic both ways that checks every received byte.
// Loading it sets MIXCCL_TIMEOUT_S=20 and, unless set, MIXCCL_DEBUG=NONE for the process.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "base/health.h"
#include "bootstrap/socket.h"
#include "proxy/proxy.h"
#include "transport/transport.h"

namespace mixccl {
namespace proxytest {

// Seconds on the steady clock.
double fault_now();

// The proxy parameters of rank `rank` of the two.
ProxyParams params(int rank);

// a and b become the two ends of one stream socket pair.
void connectedPair(Socket* a, Socket* b);

// Two proxies, ranks 0 and 1 of one communicator, each with its own Health, joined by a
// control connection and a connection of the named transport.
struct Pair {
  Health h0, h1;
  std::unique_ptr<Proxy> p0, p1;
};

// The transports a pair can be made of; every parameterised test runs over each. A new
// transport joins by adding its name here and a case in makeConnections. "ofi_tcp" and
// "ofi_shm" are the libfabric transport over the providers "tcp;ofi_rxm" and "shm".
inline const char* const kTransports[] = {"socket", "shm",
#ifdef MIXCCL_TEST_HAVE_UCX
                                          "ucx",
#endif
#ifdef MIXCCL_HAVE_OFI
                                          "ofi_tcp", "ofi_shm",
#endif
};

// What transportName() says for a kTransports entry.
std::string transportNameOf(const std::string& transport);

// A parameterised test's name suffix: the kTransports entry itself.
std::string transportParamName(const ::testing::TestParamInfo<const char*>& info);

// The libfabric address of rank 0's endpoint in the last ofi pair made (the stranger test).
extern std::string gLastOfiAddress;

// conns[r][0] (control) and [1..] (data) for the two ranks, then the transport's connect on
// both sides at once (shm's handshake is collective over the pair).
void makeConnections(const std::string& transport, int nsocks, size_t frameBytes,
                     Socket* control,
                     std::vector<std::vector<std::unique_ptr<Connection>>>* out);

// A started pair over the transport: nsocks data connections (where the transport uses
// sockets), frames of frameBytes.
std::unique_ptr<Pair> makePair(const std::string& transport, int nsocks, size_t frameBytes);

// One proxy (rank 0) whose socket data connection to rank 1 is a raw socket the test writes;
// control is the raw end of the pair's control connection.
struct Exposed {
  Health health;
  std::unique_ptr<Proxy> proxy;
  Socket raw, control;
};

std::unique_ptr<Exposed> makeExposed();

// Both ranks of the pair send and receive `messages` messages of many sizes, all in flight
// together in batches, each rank from its own thread, and check every received byte; a failed
// operation or a wrong byte adds to *bad. Returns when both ranks are done.
void trafficBothWays(Pair& p, int messages, std::atomic<int>* bad);

}  // namespace proxytest
}  // namespace mixccl
