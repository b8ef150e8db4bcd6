// How the survivors of mixcclCommShrink meet without the parent's connections, which a failure
// cuts: every survivor dials the recovery listener (recovery_listener.h) of the leader, the
// lowest parent rank it does not exclude, authenticated with the parent's secret. The leader
// checks that every survivor excludes the same ranks and hands out the new communicator's id;
// then, as createComm's peer exchange, every member's peer info goes to the leader and the
// whole table comes back. A star, not a ring: one missing or mismatched survivor is found by
// the leader, which tells every other at once. A rank dialled by a survivor that takes it for
// the leader, while it is not the leader in its own view, answers that the lists differ.
#pragma once

#include <string>
#include <vector>

#include "bootstrap/peer_info.h"
#include "bootstrap/socket.h"
#include "bootstrap/unique_id.h"
#include "base/clock.h"
#include "base/result.h"

struct mixcclComm;

namespace mixccl {

class ShrinkRendezvous {
 public:
  // excluded: sorted, unique ranks of parent, not parent's own rank.
  ShrinkRendezvous(mixcclComm* parent, std::vector<int> excluded, const Deadline& deadline);

  // The survivors agree on the exclude list; *id is the new communicator's (from the leader),
  // *newRank and *newNranks this rank's place in it.
  Result agree(UniqueIdData* id, int* newRank, int* newNranks);
  // After agree(): every member's peer info, in new-rank order (a PeerExchange).
  Result exchange(const PeerInfo& mine, std::vector<PeerInfo>* all);

 private:
  Result lead(UniqueIdData* id);
  Result follow(UniqueIdData* id);
  std::string me() const;

  mixcclComm* parent_;
  std::vector<int> excluded_;
  std::vector<int> members_;  // parent ranks of the survivors, in order: new rank = index
  Deadline deadline_;
  int leader_ = -1;
  Socket toLeader_;                  // a member's connection to the leader
  std::vector<Socket> fromMembers_;  // the leader's connection to each member (by new rank)
};

// "{1, 3}" (at most the first 8, then "... (N in all)"), for messages.
std::string describeRankList(const std::vector<int>& ranks);

}  // namespace mixccl
