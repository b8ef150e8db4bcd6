#include "core/shrink_rendezvous.h"

#include <poll.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "bootstrap/auth_connect.h"
#include "bootstrap/handshake_server.h"
#include "core/comm.h"
#include "base/error.h"
#include "base/log.h"

namespace mixccl {
namespace {

constexpr uint32_t kShrinkHelloMagic = 0x4b524853;    // "SHRK"
constexpr uint32_t kShrinkVerdictMagic = 0x54435256;  // "VRCT"
constexpr int kListedRanks = 8;

// A survivor's hello to the leader, after the handshake: who it is and whom it excludes (the
// whole list as a hash, its first ranks for messages).
struct ShrinkHello {
  uint32_t magic;
  int32_t parentRank;
  uint64_t parentHash;  // the parent's commHash: a dial from another communicator is refused
  uint64_t listHash;
  int32_t excludedCount;
  int32_t listed[kListedRanks];
  int32_t reserved;
};
static_assert(sizeof(ShrinkHello) == 64, "ShrinkHello is part of the wire format");

// The leader's answer: result mixcclSuccess with the new id, or the error every survivor reports.
struct ShrinkVerdict {
  uint32_t magic;
  int32_t result;
  int32_t newNranks;
  int32_t reserved;
  UniqueIdData id;
  char message[512];
};

uint64_t hashRanks(const std::vector<int>& ranks) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (int r : ranks)
    for (int b = 0; b < 4; ++b) h = (h ^ ((uint32_t)r >> (8 * b) & 0xff)) * 1099511628211ull;
  return h;
}

ShrinkHello helloFor(const Comm* parent, const std::vector<int>& excluded) {
  ShrinkHello h{};
  h.magic = kShrinkHelloMagic;
  h.parentRank = parent->rank;
  h.parentHash = parent->id.commHash;
  h.listHash = hashRanks(excluded);
  h.excludedCount = (int32_t)excluded.size();
  for (int i = 0; i < kListedRanks && i < (int)excluded.size(); ++i) h.listed[i] = excluded[i];
  return h;
}

// The list a hello names (its first ranks; the count says whether that is all of it).
std::string describeHello(const ShrinkHello& h) {
  std::vector<int> listed(h.listed, h.listed + std::min(h.excludedCount, kListedRanks));
  std::string s = describeRankList(listed);
  if (h.excludedCount > kListedRanks) s.insert(s.size() - 1, ", ... (" + std::to_string(h.excludedCount) + " in all)");
  return s;
}

std::string mismatchMessage(int rank, const std::string& theirs, int other, const std::string& mine) {
  return "mixcclCommShrink: rank " + std::to_string(rank) + " excludes " + theirs + " but rank " +
         std::to_string(other) + " excludes " + mine +
         ": every surviving rank must pass the same exclude list";
}

ShrinkVerdict verdict(Result result, const std::string& message) {
  ShrinkVerdict v{};
  v.magic = kShrinkVerdictMagic;
  v.result = result;
  snprintf(v.message, sizeof(v.message), "%s", message.c_str());
  return v;
}

}  // namespace

std::string describeRankList(const std::vector<int>& ranks) {
  std::string s = "{";
  for (size_t i = 0; i < ranks.size() && i < (size_t)kListedRanks; ++i)
    s += (i ? ", " : "") + std::to_string(ranks[i]);
  if (ranks.size() > (size_t)kListedRanks) s += ", ... (" + std::to_string(ranks.size()) + " in all)";
  return s + "}";
}

ShrinkRendezvous::ShrinkRendezvous(Comm* parent, std::vector<int> excluded, const Deadline& deadline)
    : parent_(parent), excluded_(std::move(excluded)), deadline_(deadline) {
  for (int r = 0; r < parent_->nranks; ++r)
    if (!std::binary_search(excluded_.begin(), excluded_.end(), r)) members_.push_back(r);
  leader_ = members_.front();
}

std::string ShrinkRendezvous::me() const { return "rank " + std::to_string(parent_->rank); }

Result ShrinkRendezvous::agree(UniqueIdData* id, int* newRank, int* newNranks) {
  *newNranks = (int)members_.size();
  *newRank = (int)(std::find(members_.begin(), members_.end(), parent_->rank) - members_.begin());
  return parent_->rank == leader_ ? lead(id) : follow(id);
}

// Waits for every other survivor's hello (or the deadline), then answers each.
Result ShrinkRendezvous::lead(UniqueIdData* id) {
  const int n = parent_->nranks;
  const std::string mine = describeRankList(excluded_);
  HandshakeServer server(parent_->recoveryListener, parent_->id.secret, sizeof(ShrinkHello), me());
  std::vector<Socket> byParent(n);
  std::vector<Socket> others;  // dials of ranks this leader excludes: told the lists differ
  std::string mismatch;
  size_t joined = 1;
  while (joined < members_.size() && !deadline_.expired()) {
    std::vector<pollfd> none;
    std::vector<HandshakeServer::Arrival> arrivals;
    MIXCCL_CHECK(server.serve(&none, deadline_.remainingMs(200), &arrivals));
    for (HandshakeServer::Arrival& a : arrivals) {
      ShrinkHello h;
      memcpy(&h, a.hello.data(), sizeof(h));
      if (h.magic != kShrinkHelloMagic || h.parentHash != parent_->id.commHash ||
          h.parentRank < 0 || h.parentRank >= n || h.excludedCount < 0 || h.excludedCount > n) {
        WARN(kLogInit, "%s: refused a shrink dial that is not from this communicator",
             me().c_str());
        continue;
      }
      const int r = h.parentRank;
      const bool member = std::binary_search(members_.begin(), members_.end(), r);
      if (mismatch.empty() && (!member || h.listHash != hashRanks(excluded_) ||
                               h.excludedCount != (int)excluded_.size()))
        mismatch = mismatchMessage(r, describeHello(h), parent_->rank, mine);
      if (!member || r == leader_ || byParent[r].valid()) {
        others.push_back(std::move(a.conn));
        continue;
      }
      byParent[r] = std::move(a.conn);
      ++joined;
    }
  }
  Result result = mixcclSuccess;
  std::string message;
  if (!mismatch.empty()) {
    result = mixcclInvalidUsage;
    message = mismatch;
  } else if (joined < members_.size()) {
    std::vector<int> missing;
    for (int r : members_)
      if (r != leader_ && !byParent[r].valid()) missing.push_back(r);
    result = mixcclTimeout;
    message = "mixcclCommShrink: rank(s) " + describeRankList(missing) + " of the survivors " +
              "did not join within the timeout (they failed too, were not meant to survive, or "
              "did not call mixcclCommShrink)";
  }
  ShrinkVerdict v = verdict(result, message);
  if (result == mixcclSuccess) {
    MIXCCL_CHECK(createRootlessUniqueId(id));
    v.id = *id;
    v.newNranks = (int)members_.size();
  }
  // Every dial is answered, also after a failure, so no survivor waits for its deadline.
  for (Socket& s : others) sendAllBefore(s, &v, sizeof(v), deadline_, "a shrinking rank");
  for (int r : members_) {
    if (!byParent[r].valid()) continue;
    const std::string who = parent_->peerName(r);
    Result sent = sendAllBefore(byParent[r], &v, sizeof(v), deadline_, who.c_str());
    if (result == mixcclSuccess && sent != mixcclSuccess) return sent;
    fromMembers_.push_back(std::move(byParent[r]));
  }
  if (result != mixcclSuccess)
    return raiseError(result, "%s: %s", me().c_str(), message.c_str());
  return mixcclSuccess;
}

// Dials the leader, then waits for its verdict while answering survivors that dial this rank
// as their leader.
Result ShrinkRendezvous::follow(UniqueIdData* id) {
  SocketAddress addr;
  MIXCCL_CHECK(fromWire(parent_->recoveryAddrs[leader_], &addr));
  const std::string leaderName = parent_->peerName(leader_) + ", the shrink's leader";
  Result dialled = connectAuthenticated(addr, parent_->id.secret, deadline_, leaderName.c_str(),
                                        &toLeader_, true);
  if (dialled != mixcclSuccess)
    return raiseError(dialled, "%s: mixcclCommShrink: cannot reach %s (lowest rank not "
                      "excluded): %s", me().c_str(), leaderName.c_str(), threadLastError().c_str());
  ShrinkHello hello = helloFor(parent_, excluded_);
  MIXCCL_CHECK(sendAllBefore(toLeader_, &hello, sizeof(hello), deadline_, leaderName.c_str()));

  HandshakeServer server(parent_->recoveryListener, parent_->id.secret, sizeof(ShrinkHello), me());
  const std::string mine = describeRankList(excluded_);
  // The leader answers at its own deadline at the latest (naming who is missing): this rank
  // waits a little longer for that answer, which says more than its own timeout would (the
  // leader may have called later, by as much as a loaded machine delays one process).
  const Deadline answerBy(deadline_.at() + std::chrono::seconds(2));
  for (;;) {
    if (answerBy.expired())
      return raiseError(mixcclTimeout, "%s: mixcclCommShrink: %s did not answer within the "
                        "timeout", me().c_str(), leaderName.c_str());
    std::vector<pollfd> extra{pollfd{toLeader_.fd(), POLLIN, 0}};
    std::vector<HandshakeServer::Arrival> arrivals;
    MIXCCL_CHECK(server.serve(&extra, answerBy.remainingMs(200), &arrivals));
    for (HandshakeServer::Arrival& a : arrivals) {
      ShrinkHello h;
      memcpy(&h, a.hello.data(), sizeof(h));
      if (h.magic != kShrinkHelloMagic || h.parentHash != parent_->id.commHash) continue;
      ShrinkVerdict v = verdict(mixcclInvalidUsage,
                                mismatchMessage(h.parentRank, describeHello(h), parent_->rank, mine));
      sendAllBefore(a.conn, &v, sizeof(v), deadline_, "a shrinking rank");
    }
    if (extra[0].revents) break;
  }
  ShrinkVerdict v;
  MIXCCL_CHECK(recvAllBefore(toLeader_, &v, sizeof(v), answerBy, leaderName.c_str()));
  v.message[sizeof(v.message) - 1] = 0;
  if (v.magic != kShrinkVerdictMagic || v.result < 0 || v.result >= mixcclNumResults)
    return raiseError(mixcclRemoteError, "%s: mixcclCommShrink: %s sent an invalid answer",
                      me().c_str(), leaderName.c_str());
  if (v.result != mixcclSuccess)
    return raiseError((Result)v.result, "%s: %s", me().c_str(), v.message);
  if (v.newNranks != (int)members_.size())
    return raiseError(mixcclInternalError, "%s: mixcclCommShrink: the leader counts %d survivors, "
                      "this rank %zu", me().c_str(), v.newNranks, members_.size());
  *id = v.id;
  return mixcclSuccess;
}

Result ShrinkRendezvous::exchange(const PeerInfo& mine, std::vector<PeerInfo>* all) {
  const size_t n = members_.size();
  all->assign(n, PeerInfo{});
  if (parent_->rank != leader_) {
    const std::string leaderName = parent_->peerName(leader_);
    MIXCCL_CHECK(sendAllBefore(toLeader_, &mine, sizeof(mine), deadline_, leaderName.c_str()));
    return recvAllBefore(toLeader_, all->data(), n * sizeof(PeerInfo), deadline_,
                         leaderName.c_str());
  }
  (*all)[0] = mine;
  for (size_t i = 1; i < n; ++i) {
    const std::string who = parent_->peerName(members_[i]);
    MIXCCL_CHECK(recvAllBefore(fromMembers_[i - 1], &(*all)[i], sizeof(PeerInfo), deadline_,
                               who.c_str()));
  }
  for (size_t i = 1; i < n; ++i) {
    const std::string who = parent_->peerName(members_[i]);
    MIXCCL_CHECK(sendAllBefore(fromMembers_[i - 1], all->data(), n * sizeof(PeerInfo), deadline_,
                               who.c_str()));
  }
  return mixcclSuccess;
}

}  // namespace mixccl
