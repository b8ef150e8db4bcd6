// Whom a timeout is blamed on. A rank knows which peers it waits for (requests posted to them
// and not finished) and since when nothing has moved with each; peers that wait too say whom
// they wait for (waiting notices, wait_notice.h). A stopped rank says nothing. So when a wait
// runs out, the blame follows the waits from this rank through the peers that reported theirs
// to the ones that did not, and names those nothing came from for longest: the stopped rank,
// not the neighbour that waits for it (docs/reliability.md, "Naming the cause").
// Not thread-safe: the proxy calls it under its progress lock.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/clock.h"
#include "transport/wait_notice.h"

namespace mixccl {

class StallTracker {
 public:
  StallTracker(int rank, int nranks);

  // A request to peer was posted / finished (either way).
  void posted(int peer, Clock::time_point now);
  void finished(int peer, Clock::time_point now);
  // progress: a count that changes whenever data moves with peer (the proxy adds the bytes
  // its connection moved and those of the requests still pending); a change restarts the idle
  // time of a peer this rank waits for.
  void sample(int peer, uint64_t progress, Clock::time_point now);
  bool waiting() const { return pending_ > 0; }
  bool waitingFor(int peer) const { return peers_[peer].pending > 0; }

  // This rank's waits, the longest idle first.
  std::vector<WaitEdge> waits(Clock::time_point now) const;
  // Peer from said it waits for edges' peers (a waiting notice); replaces what it said before.
  void heard(int from, const std::vector<WaitEdge>& edges, Clock::time_point now);
  // The waits to blame a timeout now on: from this rank's waits, through every peer whose
  // notice arrived within `fresh`, to the peers that sent none; of those, the ones idle for at
  // least nine tenths of the longest, longest first (at most kMaxWaitEdges). If every rank on
  // the way reported (they wait for each other), this rank's own longest waits. Empty when
  // this rank waits for nobody. canHear[p]: this rank has a control connection to p. A peer
  // without one (pairs connected on first use) could not have sent a notice, so its silence
  // says nothing: it is blamed only when no peer that could have spoken stayed silent. Empty:
  // every peer can be heard (every pair connected at init).
  std::vector<WaitEdge> blame(Clock::time_point now, Clock::duration fresh,
                              const std::vector<bool>& canHear = {}) const;

  // Waiting notices go out at most once per `every` (a notice that names this rank is answered
  // by one, and so on around a cycle of waits).
  bool mayReport(Clock::time_point now, Clock::duration every) const;
  void reported(Clock::time_point now) { reportedAt_ = now; everReported_ = true; }

 private:
  struct Peer {
    int pending = 0;                // requests posted to it and not finished
    Clock::time_point since{};      // the later of: the wait began, data last moved
    uint64_t progress = 0;          // the last sample
  };
  struct Report {
    bool heard = false;
    Clock::time_point at{};
    std::vector<WaitEdge> edges;
  };

  int rank_;
  std::vector<Peer> peers_;
  std::vector<Report> reports_;
  int pending_ = 0;
  Clock::time_point reportedAt_{};
  bool everReported_ = false;
};

// The message part that says whom a timeout was blamed on, for blame() of the rank timedOut:
// "timed out waiting for rank 2 (host pid 7) (no data from it for 1.0 s)" or, when another rank
// waited for the one blamed, "timed out; rank 3 (...) was waiting for rank 2 (...) (no data from
// it for 1.0 s)". own: said by timedOut itself (no name before "timed out").
std::string describeTimeout(int timedOut, const std::vector<WaitEdge>& blamed,
                            const std::vector<std::string>& names, bool own);

}  // namespace mixccl
