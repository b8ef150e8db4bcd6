#include "bootstrap/peer_exchange.h"

#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "bootstrap/auth_connect.h"
#include "bootstrap/exchange_tree.h"
#include "bootstrap/exchange_wire.h"
#include "bootstrap/handshake_server.h"
#include "base/error.h"
#include "base/log.h"

namespace mixccl {
namespace {

// A failure is passed on within this long, or not at all (that neighbour is gone too).
constexpr double kTellSeconds = 1.0;

std::string nameOf(const TreeNeighbour& n) {
  return "rank " + std::to_string(n.rank) + " (" +
         std::string(n.info.hostname, strnlen(n.info.hostname, sizeof(n.info.hostname))) +
         " pid " + std::to_string(n.info.pid) + ")";
}

}  // namespace

TreeExchange::TreeExchange(ExchangePlace place, const Deadline& deadline)
    : place_(std::move(place)), deadline_(deadline), childLinks_(place_.children.size()) {}

std::string TreeExchange::prefix() const {
  return "rank " + std::to_string(place_.rank) + " of " + std::to_string(place_.nranks) +
         ": peer-info exchange: ";
}

Result TreeExchange::fail(Result code, const std::string& cause) {
  tellNeighbours(code, cause, nullptr);
  return raiseError(code, "%s%s", prefix().c_str(), cause.c_str());
}

Result TreeExchange::failRaised(Result code) {
  tellNeighbours(code, threadLastError(), nullptr);
  return code;
}

void TreeExchange::tellNeighbours(Result code, const std::string& cause, const Socket* except) {
  failed_ = code;
  failure_ = cause;
  ExchangeHeader h{};
  h.status = (int32_t)code;
  snprintf(h.message, sizeof(h.message), "%s", cause.c_str());
  const Deadline d = Deadline::afterSeconds(kTellSeconds);
  std::string ignored;
  std::vector<Socket*> links{&parentLink_};
  for (Socket& c : childLinks_) links.push_back(&c);
  for (Socket* s : links)
    if (s->valid() && s != except) sendAllQuietly(*s, &h, sizeof(h), d, &ignored);
}

Result TreeExchange::recvFrom(const Socket& s, const TreeNeighbour& who, void* buf, size_t n) {
  std::string why;
  Result r = recvAllQuietly(s, buf, n, deadline_, &why);
  if (r == mixcclSuccess) return r;
  if (r == mixcclTimeout)
    return fail(r, nameOf(who) + " sent nothing within the init's time limit (MIXCCL_TIMEOUT_S "
                       "or the config's timeout) during the peer-info exchange");
  if (r == mixcclInvalidUsage) return fail(r, "the communicator was aborted");
  // A killed process's connection ends in a close, or a reset when it had unread data.
  if (why == "closed the connection" || why.find(strerror(ECONNRESET)) != std::string::npos)
    return fail(mixcclRemoteError, nameOf(who) + " left during the peer-info exchange (its "
                                   "connection with rank " + std::to_string(place_.rank) +
                                   " closed)");
  return fail(mixcclRemoteError, "the connection with " + nameOf(who) + " failed during the "
                                 "peer-info exchange: " + why);
}

Result TreeExchange::sendTo(const Socket& s, const TreeNeighbour& who, const void* buf, size_t n) {
  std::string why;
  Result r = sendAllQuietly(s, buf, n, deadline_, &why);
  if (r == mixcclSuccess) return r;
  return fail(r == mixcclTimeout ? r : mixcclRemoteError,
              "sending to " + nameOf(who) + " in the peer-info exchange failed: " + why);
}

Result TreeExchange::recvHeader(const Socket& s, const TreeNeighbour& who, int expectedCount) {
  ExchangeHeader h;
  MIXCCL_CHECK(recvFrom(s, who, &h, sizeof(h)));
  Result failure;
  std::string why;
  if (checkExchangeHeader(h, expectedCount, &failure, &why)) return mixcclSuccess;
  if (h.status != 0) {
    // Another rank's failure, relayed: the same cause goes on, the way it came excluded.
    tellNeighbours(failure, why, &s);
    return raiseError(failure, "%s%s", prefix().c_str(), why.c_str());
  }
  return fail(mixcclRemoteError, nameOf(who) + " " + why);
}

Result TreeExchange::acceptChildren() {
  std::vector<int> expected;
  for (const TreeNeighbour& c : place_.children) expected.push_back(c.rank);
  HandshakeServer server(place_.listener, place_.secret, sizeof(ExchangeHello),
                         "rank " + std::to_string(place_.rank) + " peer-info exchange");
  size_t arrived = 0;
  while (arrived < expected.size()) {
    // A non-blocking init being aborted (socket.h): the transfers notice it themselves.
    if (threadCancelled()) return fail(mixcclInvalidUsage, "the communicator was aborted");
    if (deadline_.expired()) {
      std::string missing;
      for (size_t i = 0; i < childLinks_.size(); ++i)
        if (!childLinks_[i].valid())
          missing += (missing.empty() ? "" : ", ") + nameOf(place_.children[i]);
      return fail(mixcclTimeout, missing + " did not connect to rank " +
                                     std::to_string(place_.rank) + " for the peer-info exchange "
                                     "within the init's time limit (MIXCCL_TIMEOUT_S or the "
                                     "config's timeout)");
    }
    // Until the children are in, the parent sends only a failure (or leaves): watch it too.
    std::vector<pollfd> extra;
    if (parentLink_.valid()) extra.push_back({parentLink_.fd(), POLLIN, 0});
    std::vector<HandshakeServer::Arrival> arrivals;
    if (Result r = server.serve(&extra, deadline_.remainingMs(100), &arrivals)) return failRaised(r);
    for (HandshakeServer::Arrival& a : arrivals) {
      ExchangeHello hello;
      memcpy(&hello, a.hello.data(), sizeof(hello));
      std::string why;
      if (!checkExchangeHello(hello, place_.commHash, expected, &why)) {
        WARN(kLogBootstrap, "rank %d: peer-info exchange: refused %s: %s", place_.rank,
             a.peer.toString().c_str(), why.c_str());
        continue;
      }
      for (size_t i = 0; i < expected.size(); ++i)
        if (expected[i] == hello.rank && !childLinks_[i].valid()) {
          childLinks_[i] = std::move(a.conn);
          ++arrived;
        }
    }
    if (!extra.empty() && extra[0].revents) return recvHeader(parentLink_, place_.parent, -1);
  }
  server.cutPending();
  return mixcclSuccess;
}

Result TreeExchange::connect() {
  if (failed_) return failed_;
  if (place_.hasParent) {
    const std::string what = nameOf(place_.parent) + ", the parent in the peer-info exchange";
    SocketAddress addr;
    MIXCCL_CHECK(fromWire(place_.parent.exchangeAddr, &addr));
    if (Result r = connectAuthenticated(addr, place_.secret, deadline_, what.c_str(), &parentLink_))
      return failRaised(r);
    ExchangeHello hello{kExchangeHelloMagic, place_.rank, place_.commHash};
    MIXCCL_CHECK(sendTo(parentLink_, place_.parent, &hello, sizeof(hello)));
  }
  MIXCCL_CHECK(acceptChildren());
  place_.listener.close();
  return mixcclSuccess;
}

Result TreeExchange::gather() {
  if (failed_) return failed_;
  const ExchangeTree tree(place_.nranks, place_.nroots);
  records_.assign(1, place_.mine);
  records_[0].rank = place_.rank;
  for (size_t i = 0; i < place_.children.size(); ++i) {
    const TreeNeighbour& child = place_.children[i];
    const std::vector<int> subtree = tree.subtree(child.rank);
    MIXCCL_CHECK(recvHeader(childLinks_[i], child, (int)subtree.size()));
    std::vector<PeerInfo> got(subtree.size());
    MIXCCL_CHECK(recvFrom(childLinks_[i], child, got.data(), got.size() * sizeof(PeerInfo)));
    std::string why;
    if (!checkSubtreeRecords(got.data(), subtree, &why))
      return fail(mixcclRemoteError, nameOf(child) + " sent bad records: " + why);
    records_.insert(records_.end(), got.begin(), got.end());
  }
  std::sort(records_.begin(), records_.end(),
            [](const PeerInfo& a, const PeerInfo& b) { return a.rank < b.rank; });
  if (!place_.hasParent) return mixcclSuccess;
  ExchangeHeader h{};
  h.count = (int32_t)records_.size();
  MIXCCL_CHECK(sendTo(parentLink_, place_.parent, &h, sizeof(h)));
  return sendTo(parentLink_, place_.parent, records_.data(), records_.size() * sizeof(PeerInfo));
}

Result TreeExchange::broadcast(std::vector<PeerInfo>* all) {
  if (failed_) return failed_;
  if (place_.hasParent) {
    MIXCCL_CHECK(recvHeader(parentLink_, place_.parent, place_.nranks));
    records_.resize(place_.nranks);
    MIXCCL_CHECK(recvFrom(parentLink_, place_.parent, records_.data(),
                          records_.size() * sizeof(PeerInfo)));
    std::string why;
    if (!checkPeerTable(records_.data(), place_.nranks, &why))
      return fail(mixcclRemoteError, nameOf(place_.parent) + " sent a bad table: " + why);
  }
  ExchangeHeader h{};
  h.count = place_.nranks;
  for (size_t i = 0; i < place_.children.size(); ++i) {
    MIXCCL_CHECK(sendTo(childLinks_[i], place_.children[i], &h, sizeof(h)));
    MIXCCL_CHECK(sendTo(childLinks_[i], place_.children[i], records_.data(),
                        records_.size() * sizeof(PeerInfo)));
  }
  *all = records_;
  parentLink_.close();
  childLinks_.clear();
  return mixcclSuccess;
}

Result TreeExchange::run(std::vector<PeerInfo>* all) {
  MIXCCL_CHECK(connect());
  MIXCCL_CHECK(gather());
  return broadcast(all);
}

}  // namespace mixccl
