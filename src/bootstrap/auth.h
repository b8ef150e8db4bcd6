// Mutual challenge-response on every connection: both sides prove they know the 128-bit secret
// of the unique id with HMAC-SHA256 over fresh nonces, so the secret never crosses the wire and
// a recorded handshake cannot be replayed.
#pragma once

#include <cstdint>

#include "bootstrap/socket.h"
#include "base/clock.h"
#include "base/result.h"

namespace mixccl {

struct Secret {
  uint8_t bytes[16];
};

// Fills buf with cryptographically random bytes.
Result randomBytes(void* buf, size_t n);

// The connecting side. what names the other side in error messages.
Result authenticateClient(const Socket& s, const Secret& secret, const Deadline& deadline,
                          const char* what);
// The accepting side. A peer that fails is refused with mixcclRemoteError.
Result authenticateServer(const Socket& s, const Secret& secret, const Deadline& deadline,
                          const char* what);

}  // namespace mixccl
