#include "bootstrap/handshake_server.h"

#include <sys/resource.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "bootstrap/fork_guard.h"
#include "base/error.h"
#include "base/log.h"

namespace mixccl {
namespace {

// Connections taken from the listener per round, so that pending handshakes are served
// between batches of a flood.
constexpr int kAcceptsPerRound = 64;
// Refusals and drops logged one line each; after that only counted (a flood must not flood
// the log too).
constexpr int kLoggedIndividually = 10;
// When accept runs out of descriptors and nothing can be evicted, the listener rests so long.
constexpr auto kAcceptPause = std::chrono::milliseconds(50);

// A quarter of the descriptors this process may open, within [64, 1024]: the rest stay for
// the job's own connections.
size_t pendingLimit() {
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY) return 1024;
  return std::min<size_t>(1024, std::max<size_t>(64, lim.rlim_cur / 4));
}

std::string plural(uint64_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

}  // namespace

HandshakeServer::HandshakeServer(const Socket& listener, const Secret& secret, size_t helloBytes,
                                 std::string name)
    : listener_(listener), secret_(secret), helloBytes_(helloBytes), name_(std::move(name)),
      maxPending_(pendingLimit()) {
  // A flood is taken in batches until accept says there is no more.
  if (listener_.valid()) setNonBlocking(listener_.fd(), true);
}

Result HandshakeServer::serve(std::vector<pollfd>* extra, int timeoutMs,
                              std::vector<Arrival>* arrivals) {
  std::vector<pollfd> fds(*extra);
  const bool listening = listener_.valid() && Clock::now() >= acceptPausedUntil_;
  fds.push_back({listening ? listener_.fd() : -1, POLLIN, 0});
  for (const Pending& p : pending_) fds.push_back({p.conn.fd(), POLLIN, 0});
  int rc;
  {
    ForkGuardPause waiting;  // the root's thread blocks here (fork_guard.h)
    rc = poll(fds.data(), fds.size(), msToNextExpiry(std::max(timeoutMs, 0)));
  }
  if (rc < 0 && errno != EINTR)
    return raiseError(mixcclSystemError, "%s: poll: %s", name_.c_str(), strerror(errno));
  const size_t listenerAt = extra->size();
  for (size_t i = 0; i < listenerAt; ++i) (*extra)[i].revents = rc > 0 ? fds[i].revents : 0;
  if (rc > 0)
    for (size_t i = 0; i < pending_.size(); ++i)
      if (fds[listenerAt + 1 + i].revents) advance(pending_[i], arrivals);
  const Clock::time_point now = Clock::now();
  const auto bound = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(kHandshakeSeconds));
  for (Pending& p : pending_)
    if (!p.done && now - p.since >= bound)
      drop(p, "it did not complete its handshake within " +
                  std::to_string((int)kHandshakeSeconds) + " s");
  pending_.erase(std::remove_if(pending_.begin(), pending_.end(),
                                [](const Pending& p) { return p.done; }),
                 pending_.end());
  Result fatal = mixcclSuccess;
  if (rc > 0 && fds[listenerAt].revents) acceptSome(arrivals, &fatal);
  return fatal;
}

void HandshakeServer::acceptSome(std::vector<Arrival>* arrivals, Result* fatal) {
  for (int i = 0; i < kAcceptsPerRound; ++i) {
    size_t unauthenticated = 0;
    for (const Pending& p : pending_) unauthenticated += p.stage != Stage::OwnerHello;
    // Room first: the newcomer is never the one turned away, the idlest stranger is.
    if (unauthenticated >= maxPending_ && evictIdlest()) {
      if (!evictionLogged_) {
        evictionLogged_ = true;
        WARN(kLogBootstrap, "%s: more than %zu connections in their handshake at once: dropping "
             "the idlest to make room (logged once; a real rank dropped so connects again)",
             name_.c_str(), maxPending_);
      }
    }
    Pending p;
    p.peer.length = sizeof(p.peer.storage);
    int fd = ::accept4(listener_.fd(), p.peer.sa(), &p.peer.length, SOCK_CLOEXEC);
    if (fd < 0) {
      const int err = errno;
      if (err == EAGAIN || err == EWOULDBLOCK) return;
      if (err == EINTR || err == ECONNABORTED || err == EPROTO || err == EPERM) continue;
      if (err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM) {
        // Out of descriptors: a stranger's is worth less than the next connection.
        if (!descriptorsLogged_) {
          descriptorsLogged_ = true;
          WARN(kLogBootstrap, "%s: accept: %s; dropping the idlest connection in its handshake "
               "(logged once)", name_.c_str(), strerror(err));
        }
        if (evictIdlest()) continue;
        acceptPausedUntil_ = Clock::now() + kAcceptPause;
        return;
      }
      *fatal = raiseError(mixcclSystemError, "%s: accept: %s", name_.c_str(), strerror(err));
      return;
    }
    setTcpOptions(fd);
    ++counts_.accepted;
    p.conn = Socket(fd);
    p.since = Clock::now();
    p.buf.resize(kClientHelloBytes);
    pending_.push_back(std::move(p));
    advance(pending_.back(), arrivals);  // its hello is often there already
    if (pending_.back().done) pending_.pop_back();
  }
}

// Reads what the current stage still lacks, and moves on while whole messages are there.
void HandshakeServer::advance(Pending& p, std::vector<Arrival>* arrivals) {
  while (!p.done) {
    ssize_t k = ::recv(p.conn.fd(), p.buf.data() + p.got, p.buf.size() - p.got, MSG_DONTWAIT);
    if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
    if (k <= 0) {
      const std::string how = k == 0 ? "closed the connection" : std::string(strerror(errno));
      if (p.stage == Stage::Hello && !p.heard)
        drop(p, "it " + how + " before its handshake");
      else if (p.stage == Stage::OwnerHello)
        drop(p, "it " + how + " after authenticating, before its hello");
      else
        refuse(p, "it " + how + (p.stage == Stage::Proof
                                     ? " instead of proving it holds the secret"
                                     : " in the middle of its handshake"));
      return;
    }
    p.heard = true;
    p.got += (size_t)k;
    if (p.got < p.buf.size()) continue;
    std::string why;
    if (p.stage == Stage::Hello) {
      uint8_t challenge[kServerChallengeBytes];
      Result r = serverChallenge(secret_, p.buf.data(), &p.auth, challenge, &why);
      if (r != mixcclSuccess) return refuse(p, why.empty() ? "cannot compute a challenge" : why);
      // A fresh connection's send buffer takes 56 bytes whole; one that does not is no peer.
      ssize_t sent = ::send(p.conn.fd(), challenge, sizeof(challenge), MSG_NOSIGNAL | MSG_DONTWAIT);
      if (sent != (ssize_t)sizeof(challenge)) return refuse(p, "it did not take the challenge");
      p.stage = Stage::Proof;
      p.buf.assign(kClientProofBytes, 0);
    } else if (p.stage == Stage::Proof) {
      Result r = serverCheckProof(secret_, p.auth, p.buf.data(), &why);
      if (r != mixcclSuccess) return refuse(p, why.empty() ? "cannot check the proof" : why);
      p.stage = Stage::OwnerHello;
      p.buf.assign(helloBytes_, 0);
    } else {
      arrivals->push_back(Arrival{std::move(p.conn), p.peer, std::move(p.buf)});
      p.done = true;
      return;
    }
    p.got = 0;
  }
}

bool HandshakeServer::evictIdlest() {
  // Idlest first: nothing sent, then half a hello, then a challenge left unanswered.
  auto idleness = [](const Pending& p) {
    return !p.heard ? 0 : p.stage == Stage::Hello ? 1 : 2;
  };
  Pending* victim = nullptr;
  for (Pending& p : pending_) {
    if (p.done || p.stage == Stage::OwnerHello) continue;
    if (!victim || idleness(p) < idleness(*victim) ||
        (idleness(p) == idleness(*victim) && p.since < victim->since))
      victim = &p;
  }
  if (!victim) return false;
  drop(*victim, "evicted to make room for newer connections");
  pending_.erase(pending_.begin() + (victim - pending_.data()));
  return true;
}

void HandshakeServer::refuse(Pending& p, const std::string& why) {
  ++counts_.refused;
  note("refused", p, why);
  p.conn.close();
  p.done = true;
}

void HandshakeServer::drop(Pending& p, const std::string& why) {
  ++counts_.dropped;
  note("dropped", p, why);
  p.conn.close();
  p.done = true;
}

void HandshakeServer::note(const char* verb, const Pending& p, const std::string& why) {
  if (logged_ > kLoggedIndividually) return;
  if (logged_++ == kLoggedIndividually) {
    WARN(kLogBootstrap, "%s: more connections refused or dropped; they are counted, not logged",
         name_.c_str());
    return;
  }
  raiseError(mixcclRemoteError, "%s connection from %s: %s", verb, p.peer.toString().c_str(),
             why.c_str());
}

void HandshakeServer::cutPending() {
  counts_.cut += pending_.size();
  pending_.clear();
}

int HandshakeServer::msToNextExpiry(int cap) const {
  if (pending_.empty()) return cap;
  Clock::time_point first = pending_.front().since;
  for (const Pending& p : pending_) first = std::min(first, p.since);
  const Deadline expiry(first + std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>(kHandshakeSeconds)));
  return std::min(cap, expiry.remainingMs() + 1);
}

std::string HandshakeServer::strangerReport() const {
  std::string s;
  if (counts_.refused)
    s = "refused " + plural(counts_.refused, "connection", "connections") +
        " that failed authentication (wrong secret or not a mixccl peer)";
  if (counts_.dropped)
    s += s.empty() ? "dropped " + plural(counts_.dropped, "idle connection", "idle connections")
                   : " and dropped " + plural(counts_.dropped, "idle one", "idle ones");
  return s;
}

}  // namespace mixccl
