// The accepting side of many handshakes at once, on its owner's one thread: the rendezvous root
// and a rank's transport listener. Each connection is a small state machine that poll() drives
// (the client's hello, the challenge, the proof, then the owner's fixed-size hello), so a
// stranger costs a descriptor and a few hundred bytes, never a thread. Strangers cannot crowd
// the real peers out:
// - a connection that sends anything but the handshake is refused at once;
// - at most maxPending() connections are in their handshake at once: one more evicts the
//   idlest that has not authenticated (one that sent nothing, then one with half a hello, then
//   one that has its challenge but sent no proof; the oldest first in each), never the
//   newcomer; a real peer evicted so connects again (auth_connect.h);
// - a connection that has not completed within kHandshakeSeconds is dropped.
// What became of the strangers is counted (strangerReport, for the owner's failure messages)
// and logged, one line for each of the first few.
#pragma once

#include <poll.h>

#include <cstdint>
#include <string>
#include <vector>

#include "bootstrap/auth.h"
#include "bootstrap/socket.h"
#include "bootstrap/socket_address.h"
#include "base/clock.h"
#include "base/result.h"

namespace mixccl {

class HandshakeServer {
 public:
  static constexpr double kHandshakeSeconds = 3.0;

  // A connection that authenticated and sent the owner's hello.
  struct Arrival {
    Socket conn;
    SocketAddress peer;
    std::vector<uint8_t> hello;  // helloBytes
  };
  // Every accepted connection ends in one of the last three, or becomes an Arrival.
  struct Counts {
    uint64_t accepted = 0;
    uint64_t refused = 0;  // failed authentication: not the handshake, or a wrong proof
    uint64_t dropped = 0;  // idle: evicted for room, out of time, or gone before its handshake
    uint64_t cut = 0;      // still in its handshake when the owner called cutPending()
  };

  // Serves listener (made nonblocking; it stays the owner's). name begins log lines
  // ("rendezvous root 10.0.0.1:5000", "rank 3").
  HandshakeServer(const Socket& listener, const Secret& secret, size_t helloBytes,
                  std::string name);

  // Waits up to timeoutMs (less when a handshake runs out of time first) for the listener, the
  // pending connections and extra (the owner's own descriptors: their revents are set on
  // return); accepts, advances every handshake, drops what is out of time, and appends the
  // completed ones to *arrivals. Fails only if poll or accept fail for good (a listener shut
  // down by an abort: "accept: Invalid argument").
  Result serve(std::vector<pollfd>* extra, int timeoutMs, std::vector<Arrival>* arrivals);

  // Closes every connection still in its handshake (the owner needs no more).
  void cutPending();

  const Counts& counts() const { return counts_; }
  size_t maxPending() const { return maxPending_; }
  // No connection is in its handshake (the owner's thread needs no crypto until one comes).
  bool idle() const { return pending_.empty(); }
  // "refused 2 connections that failed authentication (...) and dropped 5 idle ones", or "".
  std::string strangerReport() const;

 private:
  enum class Stage { Hello, Proof, OwnerHello };
  struct Pending {
    Socket conn;
    SocketAddress peer;
    Clock::time_point since;
    Stage stage = Stage::Hello;
    std::vector<uint8_t> buf;  // the current stage's message
    size_t got = 0;
    bool heard = false;  // any byte came
    bool done = false;   // ended (arrived, refused or dropped): erased after this round
    ServerAuthState auth;
  };

  void acceptSome(std::vector<Arrival>* arrivals, Result* fatal);
  void advance(Pending& p, std::vector<Arrival>* arrivals);
  bool evictIdlest();
  void refuse(Pending& p, const std::string& why);
  void drop(Pending& p, const std::string& why);
  void note(const char* verb, const Pending& p, const std::string& why);
  int msToNextExpiry(int cap) const;

  const Socket& listener_;
  Secret secret_;
  size_t helloBytes_;
  std::string name_;
  size_t maxPending_;
  std::vector<Pending> pending_;
  Counts counts_;
  Clock::time_point acceptPausedUntil_{};
  int logged_ = 0;
  bool evictionLogged_ = false;
  bool descriptorsLogged_ = false;
};

}  // namespace mixccl
