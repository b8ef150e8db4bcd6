#include "bootstrap/rendezvous_wire.h"

#include <sys/socket.h>

#include <cstring>

namespace mixccl {
namespace {

bool terminated(const char* s, size_t cap) { return memchr(s, 0, cap) != nullptr; }

bool checkPeerInfo(const PeerInfo& p, std::string* why) {
  if (!terminated(p.hostname, sizeof(p.hostname))) {
    *why = "host name is not terminated";
    return false;
  }
  if (!terminated(p.adaptor, sizeof(p.adaptor))) {
    *why = "adaptor name is not terminated";
    return false;
  }
  if (p.listenAddr.family != AF_INET && p.listenAddr.family != AF_INET6) {
    *why = "listen address has unknown family " + std::to_string(p.listenAddr.family);
    return false;
  }
  if (p.listenAddr.port == 0) {
    *why = "listen address has port 0";
    return false;
  }
  return true;
}

}  // namespace

bool checkRankHello(const RankHello& h, std::string* why) {
  if (h.magic != kRankHelloMagic) {
    *why = "not a rank hello (bad magic)";
    return false;
  }
  if (h.nranks < 1 || h.nranks > kMaxRanks || h.rank < 0 || h.rank >= h.nranks) {
    *why = "rank " + std::to_string(h.rank) + " of " + std::to_string(h.nranks) + " is invalid";
    return false;
  }
  std::string detail;
  if (!checkPeerInfo(h.info, &detail)) {
    *why = "rank " + std::to_string(h.rank) + ": " + detail;
    return false;
  }
  return true;
}

bool checkRootReply(const RootReply& r, int nranks, Result* refusal, std::string* why) {
  *refusal = mixcclSuccess;
  if (r.status != 0) {
    *refusal = (r.status > 0 && r.status < mixcclNumResults) ? (Result)r.status
                                                              : mixcclRemoteError;
    *why = std::string(r.message, strnlen(r.message, sizeof(r.message)));
    if (why->empty()) *why = "no reason given";
    return false;
  }
  if (r.nranks != nranks) {
    *refusal = mixcclRemoteError;
    *why = "answered with " + std::to_string(r.nranks) + " ranks, expected " +
           std::to_string(nranks);
    return false;
  }
  return true;
}

bool checkPeerTable(const PeerInfo* table, int nranks, std::string* why) {
  for (int i = 0; i < nranks; ++i) {
    if (table[i].rank != i) {
      *why = "table entry " + std::to_string(i) + " says rank " + std::to_string(table[i].rank);
      return false;
    }
    std::string detail;
    if (!checkPeerInfo(table[i], &detail)) {
      *why = "table entry " + std::to_string(i) + ": " + detail;
      return false;
    }
  }
  return true;
}

RendezvousTable::Verdict RendezvousTable::offer(const RankHello& h, std::string* why) {
  if (!checkRankHello(h, why)) return Verdict::BadHello;
  if (nranks_ < 0) {
    nranks_ = h.nranks;
    table_.assign(nranks_, PeerInfo{});
    present_.assign(nranks_, false);
  } else if (h.nranks != nranks_) {
    *why = "rank " + std::to_string(h.rank) + " says nranks=" + std::to_string(h.nranks) +
           ", others said " + std::to_string(nranks_);
    return Verdict::WrongSize;
  }
  if (present_[h.rank]) {
    *why = "rank " + std::to_string(h.rank) + " joined twice";
    return Verdict::Duplicate;
  }
  table_[h.rank] = h.info;
  table_[h.rank].rank = h.rank;
  present_[h.rank] = true;
  ++arrived_;
  return Verdict::Admitted;
}

void RendezvousTable::drop(int r) {
  if (!has(r)) return;
  present_[r] = false;
  --arrived_;
}

}  // namespace mixccl
