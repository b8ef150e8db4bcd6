#include "proxy/stall_tracker.h"

#include <algorithm>
#include <cstdio>
#include <deque>

namespace mixccl {

namespace {

uint32_t millisBetween(Clock::time_point from, Clock::time_point to) {
  if (to <= from) return 0;
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(to - from).count();
  return ms > (long long)UINT32_MAX ? UINT32_MAX : (uint32_t)ms;
}

uint32_t addMillis(uint32_t a, uint32_t b) { return a > UINT32_MAX - b ? UINT32_MAX : a + b; }

void longestFirst(std::vector<WaitEdge>* edges) {
  std::stable_sort(edges->begin(), edges->end(),
                   [](const WaitEdge& a, const WaitEdge& b) { return a.idleMs > b.idleMs; });
}

}  // namespace

StallTracker::StallTracker(int rank, int nranks) : rank_(rank), peers_(nranks), reports_(nranks) {}

void StallTracker::posted(int peer, Clock::time_point now) {
  if (peer < 0 || peer >= (int)peers_.size()) return;
  Peer& p = peers_[peer];
  // Waiting for a peer begins now, however long ago it last sent anything.
  if (p.pending++ == 0) p.since = now;
  ++pending_;
}

void StallTracker::finished(int peer, Clock::time_point now) {
  if (peer < 0 || peer >= (int)peers_.size() || peers_[peer].pending == 0) return;
  Peer& p = peers_[peer];
  --p.pending;
  --pending_;
  p.since = now;  // a finished request is progress with that peer
}

void StallTracker::sample(int peer, uint64_t progress, Clock::time_point now) {
  if (peer < 0 || peer >= (int)peers_.size()) return;
  Peer& p = peers_[peer];
  if (progress != p.progress) p.since = now;
  p.progress = progress;
}

std::vector<WaitEdge> StallTracker::waits(Clock::time_point now) const {
  std::vector<WaitEdge> out;
  for (int q = 0; q < (int)peers_.size(); ++q)
    if (peers_[q].pending > 0) out.push_back(WaitEdge{rank_, q, millisBetween(peers_[q].since, now)});
  longestFirst(&out);
  return out;
}

void StallTracker::heard(int from, const std::vector<WaitEdge>& edges, Clock::time_point now) {
  if (from < 0 || from >= (int)reports_.size()) return;
  Report& r = reports_[from];
  r.heard = true;
  r.at = now;
  r.edges = edges;
}

std::vector<WaitEdge> StallTracker::blame(Clock::time_point now, Clock::duration fresh,
                                          const std::vector<bool>& canHear) const {
  const std::vector<WaitEdge> mine = waits(now);
  std::vector<bool> seen(peers_.size(), false);
  seen[rank_] = true;
  std::vector<WaitEdge> silent, unheard;
  std::deque<WaitEdge> next(mine.begin(), mine.end());
  while (!next.empty()) {
    WaitEdge e = next.front();
    next.pop_front();
    if (seen[e.peer]) continue;
    seen[e.peer] = true;
    const Report& r = reports_[e.peer];
    if (!r.heard && (size_t)e.peer < canHear.size() && !canHear[e.peer]) {
      unheard.push_back(e);
      continue;
    }
    if (!r.heard || now - r.at > fresh) {
      silent.push_back(e);
      continue;
    }
    // The peer waits itself: follow its waits, aged by the time since it reported them.
    const uint32_t age = millisBetween(r.at, now);
    for (WaitEdge f : r.edges) {
      f.idleMs = addMillis(f.idleMs, age);
      next.push_back(f);
    }
  }
  std::vector<WaitEdge> out = !silent.empty() ? silent : !unheard.empty() ? unheard : mine;
  longestFirst(&out);
  if (out.empty()) return out;
  const uint64_t longest = out.front().idleMs;
  size_t keep = 0;
  while (keep < out.size() && keep < kMaxWaitEdges && (uint64_t)out[keep].idleMs * 10 >= longest * 9)
    ++keep;
  out.resize(keep);
  return out;
}

bool StallTracker::mayReport(Clock::time_point now, Clock::duration every) const {
  return !everReported_ || now - reportedAt_ >= every;
}

std::string describeTimeout(int timedOut, const std::vector<WaitEdge>& blamed,
                            const std::vector<std::string>& names, bool own) {
  // The waiters in order, timedOut's own waits first.
  std::vector<int> waiters;
  for (const WaitEdge& e : blamed)
    if (std::find(waiters.begin(), waiters.end(), e.waiter) == waiters.end())
      waiters.push_back(e.waiter);
  std::stable_partition(waiters.begin(), waiters.end(), [&](int w) { return w == timedOut; });
  std::string s = own ? "timed out" : names[timedOut] + " timed out";
  for (int w : waiters) {
    std::string list;
    for (const WaitEdge& e : blamed) {
      if (e.waiter != w) continue;
      char idle[32];
      snprintf(idle, sizeof(idle), "%.1f", e.idleMs / 1000.0);
      if (!list.empty()) list += " and ";
      list += names[e.peer] + " (no data from it for " + idle + " s)";
    }
    s += w == timedOut ? " waiting for " + list : "; " + names[w] + " was waiting for " + list;
  }
  return s;
}

}  // namespace mixccl
