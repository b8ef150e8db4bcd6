#include "transport/wait_notice.h"

#include <cstring>

#include "transport/frame.h"

namespace mixccl {

namespace {

constexpr uint32_t kNoRank = UINT32_MAX;

void put(std::string* out, uint32_t v) { out->append(reinterpret_cast<const char*>(&v), sizeof(v)); }

uint32_t get(const std::string& in, size_t at) {
  uint32_t v;
  memcpy(&v, in.data() + at, sizeof(v));
  return v;
}

}  // namespace

std::string encodeWaitNotice(const WaitNotice& notice) {
  size_t count = notice.edges.size() < kMaxWaitEdges ? notice.edges.size() : kMaxWaitEdges;
  std::string out;
  out.reserve(kWaitNoticeHeaderBytes + count * kWaitEdgeBytes);
  put(&out, notice.timedOut < 0 ? kNoRank : (uint32_t)notice.timedOut);
  put(&out, (uint32_t)count);
  for (size_t i = 0; i < count; ++i) {
    put(&out, (uint32_t)notice.edges[i].waiter);
    put(&out, (uint32_t)notice.edges[i].peer);
    put(&out, notice.edges[i].idleMs);
  }
  return out;
}

bool decodeWaitNotice(uint32_t flags, uint32_t seq, int sender, int nranks, const std::string& bytes,
                      WaitNotice* out, std::string* why) {
  auto refuse = [why](const std::string& what) {
    *why = what;
    return false;
  };
  if (flags != kFrameFlagWaiting && flags != kFrameFlagPeerFailed)
    return refuse("a wait list on a frame that cannot carry one");
  if (bytes.size() < kWaitNoticeHeaderBytes || bytes.size() > kWaitNoticeMaxBytes)
    return refuse("a wait list of " + std::to_string(bytes.size()) + " bytes");
  const uint32_t timedOut = get(bytes, 0), count = get(bytes, 4);
  if (count < 1 || count > kMaxWaitEdges ||
      bytes.size() != kWaitNoticeHeaderBytes + count * kWaitEdgeBytes)
    return refuse("a wait list whose count (" + std::to_string(count) + ") does not match its " +
                  std::to_string(bytes.size()) + " bytes");
  const uint32_t n = (uint32_t)nranks;
  WaitNotice notice;
  for (uint32_t i = 0; i < count; ++i) {
    const size_t at = kWaitNoticeHeaderBytes + i * kWaitEdgeBytes;
    const uint32_t waiter = get(bytes, at), peer = get(bytes, at + 4);
    if (waiter >= n || peer >= n || waiter == peer)
      return refuse("a wait list naming rank " + std::to_string(waiter) + " waiting for rank " +
                    std::to_string(peer) + " of " + std::to_string(nranks));
    notice.edges.push_back(WaitEdge{(int)waiter, (int)peer, get(bytes, at + 8)});
  }
  if (flags == kFrameFlagWaiting) {
    if (timedOut != kNoRank || seq != 0) return refuse("a waiting notice with a timed-out rank");
    for (const WaitEdge& e : notice.edges)
      if (e.waiter != sender) return refuse("a waiting notice with another rank's waits");
  } else {
    if (timedOut >= n) return refuse("a timeout notice without the rank that timed out");
    if (seq != (uint32_t)notice.edges[0].peer)
      return refuse("a timeout notice whose seq is not the rank it blames");
    notice.timedOut = (int)timedOut;
  }
  *out = std::move(notice);
  return true;
}

}  // namespace mixccl
