// Messages between a rank and the rendezvous root (after authentication), and the pure
// functions that check them. Everything read from a socket goes through one of the check
// functions before any field is used; they take no sockets, so they are fuzzed directly
// (tests/fuzz/fuzz_bootstrap.cc).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bootstrap/peer_info.h"
#include "base/result.h"

namespace mixccl {

constexpr uint32_t kRankHelloMagic = 0x4c4c4548;  // "HELL"
constexpr int32_t kMaxRanks = 1 << 20;

struct RankHello {
  uint32_t magic;
  int32_t nranks;
  int32_t rank;
  uint32_t reserved;
  PeerInfo info;
};

// The root answers each rank with a status (0 = ok, else a mixcclResult_t) and, if ok, the
// table of nranks PeerInfo entries. A refusal carries a NUL-terminated reason (for example
// which rank left during the rendezvous) so every rank can report it.
struct RootReply {
  int32_t status;
  int32_t nranks;
  char message[248];
};
static_assert(sizeof(RootReply) == 256, "RootReply is part of the wire format");

// Structure of one hello: magic, rank in [0, nranks), nranks in [1, kMaxRanks], the peer's
// strings terminated, its listen address decodable. why receives the reason on failure.
bool checkRankHello(const RankHello& h, std::string* why);

// A root's reply as a rank sees it: status a result code, nranks what this rank asked for.
// On a refusal (*refusal set to the code) the message is returned terminated in *why.
bool checkRootReply(const RootReply& r, int nranks, Result* refusal, std::string* why);

// The table the root sent: entry i says rank i, strings terminated, addresses decodable.
bool checkPeerTable(const PeerInfo* table, int nranks, std::string* why);

// The root's bookkeeping of admitted ranks, without sockets: offer() takes a checked hello
// and says whether it joins (first hello fixes nranks; a rank may join once).
class RendezvousTable {
 public:
  enum class Verdict { Admitted, BadHello, WrongSize, Duplicate };
  Verdict offer(const RankHello& h, std::string* why);
  // Forgets rank r (its connection ended before the table went out).
  void drop(int r);
  int nranks() const { return nranks_; }
  int arrived() const { return arrived_; }
  bool complete() const { return nranks_ > 0 && arrived_ == nranks_; }
  bool has(int r) const { return r >= 0 && r < nranks_ && present_[r]; }
  const std::vector<PeerInfo>& table() const { return table_; }

 private:
  int nranks_ = -1;
  int arrived_ = 0;
  std::vector<PeerInfo> table_;
  std::vector<bool> present_;
};

}  // namespace mixccl
