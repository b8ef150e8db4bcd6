// Mutual challenge-response on every connection: both sides prove they know the 128-bit secret
// of the unique id with HMAC-SHA256 over fresh nonces, so the secret never crosses the wire and
// a recorded handshake cannot be replayed.
#pragma once

#include <cstdint>
#include <string>

#include "bootstrap/socket.h"
#include "base/clock.h"
#include "base/result.h"

namespace mixccl {

struct Secret {
  uint8_t bytes[16];
};

// Fills buf with cryptographically random bytes.
Result randomBytes(void* buf, size_t n);
// Frees the calling thread's OpenSSL state now rather than at its exit. A fork-guarded thread
// (fork_guard.h) that ends calls it while still busy: OpenSSL frees that state under a lock of
// its own, and a child forked at that moment would inherit the lock held, so that its first new
// thread needing random bytes (a rank's lazy acceptor) would wait on it forever.
void releaseThreadCrypto();

// The connecting side. what names the other side in error messages. With closedEarly set, a
// server that closes the connection before it sent its challenge (one that drops idle
// connections when strangers flood it: handshake_server.h) is not an error to log: *closedEarly
// becomes true and the caller may connect again (auth_connect.h).
Result authenticateClient(const Socket& s, const Secret& secret, const Deadline& deadline,
                          const char* what, bool* closedEarly = nullptr);
// The accepting side. A peer that fails is refused with mixcclRemoteError.
Result authenticateServer(const Socket& s, const Secret& secret, const Deadline& deadline,
                          const char* what);

// The accepting side one message at a time, without a socket or a wait, for a loop that serves
// many connections on one thread (handshake_server.h). authenticateServer runs the same steps.
constexpr size_t kClientHelloBytes = 24;
constexpr size_t kServerChallengeBytes = 56;
constexpr size_t kClientProofBytes = 32;
struct ServerAuthState {
  uint8_t clientNonce[16];
  uint8_t serverNonce[16];
};
// Checks the client's hello and fills the challenge to send back. A peer that does not speak
// the protocol gets mixcclRemoteError and *why ("not a mixccl peer").
Result serverChallenge(const Secret& secret, const uint8_t* hello, ServerAuthState* state,
                       uint8_t* challenge, std::string* why);
// Checks the client's proof: mixcclRemoteError and *why ("authentication failed (wrong
// secret): ...") unless it holds the secret.
Result serverCheckProof(const Secret& secret, const ServerAuthState& state, const uint8_t* proof,
                        std::string* why);

}  // namespace mixccl
