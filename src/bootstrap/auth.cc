#include "bootstrap/auth.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <sys/socket.h>

#include <cstring>
#include <string>

#include "bootstrap/fork_guard.h"  // lockCrypto: OpenSSL calls vs fork()
#include "base/error.h"

namespace mixccl {
namespace {


constexpr uint32_t kHelloMagic = 0x3143584d;  // "MXC1"
constexpr uint32_t kProtocolVersion = 1;
constexpr size_t kNonceBytes = 16;
constexpr size_t kMacBytes = 32;

struct ClientHello {
  uint32_t magic;
  uint32_t version;
  uint8_t nonce[kNonceBytes];
};
struct ServerChallenge {
  uint32_t magic;
  uint32_t version;
  uint8_t nonce[kNonceBytes];
  uint8_t mac[kMacBytes];
};
struct ClientProof {
  uint8_t mac[kMacBytes];
};

// Sent in place of a proof by a client whose check of the server failed, so that the server can
// say "wrong secret" instead of seeing only a closed connection. It proves nothing (the client
// never sends a real proof to a server that failed), and 32 fixed bytes are as likely an HMAC
// output as a guessed secret.
constexpr uint8_t kWrongSecretVerdict[kMacBytes] = {'m', 'i', 'x', 'c', 'c', 'l', ' ', 'w',
                                                    'r', 'o', 'n', 'g', ' ', 's', 'e', 'c',
                                                    'r', 'e', 't', ':', ' ', 'p', 'r', 'o',
                                                    'o', 'f', ' ', 'r', 'e', 'f', 'u', 's'};

// What every wrong-secret message ends with: the fix.
constexpr const char* kSameSecret =
    "every rank of a job must use the same unique id (or the same MIXCCL_COMM_ID and "
    "MIXCCL_COMM_SECRET)";

// HMAC(secret, role || clientNonce || serverNonce): the role string keeps the server's proof
// from being reflected back as the client's.
Result computeMac(const Secret& secret, const char* role, const uint8_t* clientNonce,
                  const uint8_t* serverNonce, uint8_t* out) {
  uint8_t msg[16 + 2 * kNonceBytes] = {0};
  strncpy(reinterpret_cast<char*>(msg), role, 15);
  memcpy(msg + 16, clientNonce, kNonceBytes);
  memcpy(msg + 16 + kNonceBytes, serverNonce, kNonceBytes);
  unsigned int len = 0;
  auto lock = lockCrypto();
  if (!HMAC(EVP_sha256(), secret.bytes, sizeof(secret.bytes), msg, sizeof(msg), out, &len) ||
      len != kMacBytes)
    return raiseError(mixcclSystemError, "HMAC-SHA256 failed");
  return mixcclSuccess;
}

}  // namespace

Result randomBytes(void* buf, size_t n) {
  auto lock = lockCrypto();
  if (RAND_bytes(static_cast<unsigned char*>(buf), (int)n) != 1)
    return raiseError(mixcclSystemError, "cannot get random bytes from OpenSSL");
  return mixcclSuccess;
}

void releaseThreadCrypto() {
  auto lock = lockCrypto();
  OPENSSL_thread_stop();
}

Result authenticateClient(const Socket& s, const Secret& secret, const Deadline& deadline,
                          const char* what, bool* closedEarly) {
  ClientHello hello{kHelloMagic, kProtocolVersion, {}};
  MIXCCL_CHECK(randomBytes(hello.nonce, kNonceBytes));
  ServerChallenge ch;
  std::string why;
  bool sending = true;
  Result r = sendAllQuietly(s, &hello, sizeof(hello), deadline, &why);
  if (r == mixcclSuccess) {
    sending = false;
    r = recvAllQuietly(s, &ch, sizeof(ch), deadline, &why);
  }
  if (r != mixcclSuccess) {
    // Nothing came from the server yet: it closed (or reset) the connection before the
    // handshake, as one flooded by strangers does to the idlest connections.
    if (r == mixcclRemoteError && closedEarly) {
      *closedEarly = true;
      return r;
    }
    return raiseTransferError(r, why, what, sending);
  }
  if (ch.magic != kHelloMagic || ch.version != kProtocolVersion)
    return raiseError(mixcclRemoteError, "%s does not speak mixccl protocol %u", what,
                      kProtocolVersion);
  uint8_t expected[kMacBytes];
  MIXCCL_CHECK(computeMac(secret, "server", hello.nonce, ch.nonce, expected));
  if (CRYPTO_memcmp(expected, ch.mac, kMacBytes) != 0) {
    ClientProof verdict;
    memcpy(verdict.mac, kWrongSecretVerdict, kMacBytes);
    ssize_t sent = ::send(s.fd(), &verdict, sizeof(verdict), MSG_NOSIGNAL | MSG_DONTWAIT);
    (void)sent;  // best effort: the server then names the failure too
    return raiseError(mixcclRemoteError,
                      "authentication with %s failed (wrong secret): its proof does not match "
                      "this rank's secret, so the two hold different secrets; %s",
                      what, kSameSecret);
  }
  ClientProof proof;
  MIXCCL_CHECK(computeMac(secret, "client", hello.nonce, ch.nonce, proof.mac));
  return sendAllBefore(s, &proof, sizeof(proof), deadline, what);
}

Result serverChallenge(const Secret& secret, const uint8_t* helloBytes, ServerAuthState* state,
                       uint8_t* challenge, std::string* why) {
  ClientHello hello;
  memcpy(&hello, helloBytes, sizeof(hello));
  if (hello.magic != kHelloMagic || hello.version != kProtocolVersion) {
    *why = "not a mixccl peer";
    return mixcclRemoteError;
  }
  ServerChallenge ch{kHelloMagic, kProtocolVersion, {}, {}};
  MIXCCL_CHECK(randomBytes(ch.nonce, kNonceBytes));
  MIXCCL_CHECK(computeMac(secret, "server", hello.nonce, ch.nonce, ch.mac));
  memcpy(state->clientNonce, hello.nonce, kNonceBytes);
  memcpy(state->serverNonce, ch.nonce, kNonceBytes);
  memcpy(challenge, &ch, sizeof(ch));
  return mixcclSuccess;
}

Result serverCheckProof(const Secret& secret, const ServerAuthState& state, const uint8_t* proof,
                        std::string* why) {
  if (memcmp(proof, kWrongSecretVerdict, kMacBytes) == 0) {
    *why = std::string("authentication failed (wrong secret): the peer holds a different "
                       "secret (it found this side's proof wrong); ") + kSameSecret;
    return mixcclRemoteError;
  }
  uint8_t expected[kMacBytes];
  MIXCCL_CHECK(computeMac(secret, "client", state.clientNonce, state.serverNonce, expected));
  if (CRYPTO_memcmp(expected, proof, kMacBytes) != 0) {
    *why = "authentication failed (wrong secret): its proof does not match this side's secret";
    return mixcclRemoteError;
  }
  return mixcclSuccess;
}

Result authenticateServer(const Socket& s, const Secret& secret, const Deadline& deadline,
                          const char* what) {
  uint8_t hello[kClientHelloBytes];
  std::string why;
  Result r = recvAllQuietly(s, hello, sizeof(hello), deadline, &why);
  if (r != mixcclSuccess)
    return raiseError(r, "refused %s: it %s before its handshake", what,
                      r == mixcclRemoteError ? why.c_str() : "sent nothing");
  ServerAuthState state;
  uint8_t challenge[kServerChallengeBytes];
  r = serverChallenge(secret, hello, &state, challenge, &why);
  if (r == mixcclRemoteError) return raiseError(r, "refused %s: %s", what, why.c_str());
  MIXCCL_CHECK(r);
  MIXCCL_CHECK(sendAllBefore(s, challenge, sizeof(challenge), deadline, what));
  uint8_t proof[kClientProofBytes];
  r = recvAllQuietly(s, proof, sizeof(proof), deadline, &why);
  if (r != mixcclSuccess)
    return raiseError(r, "refused %s: it %s instead of proving it holds the secret", what,
                      r == mixcclRemoteError ? why.c_str() : "sent nothing");
  r = serverCheckProof(secret, state, proof, &why);
  if (r == mixcclRemoteError) return raiseError(r, "refused %s: %s", what, why.c_str());
  return r;
}

static_assert(sizeof(ClientHello) == kClientHelloBytes, "auth.h's sizes are the wire's");
static_assert(sizeof(ServerChallenge) == kServerChallengeBytes, "auth.h's sizes are the wire's");
static_assert(sizeof(ClientProof) == kClientProofBytes, "auth.h's sizes are the wire's");

}  // namespace mixccl
