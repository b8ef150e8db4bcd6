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

Result authenticateClient(const Socket& s, const Secret& secret, const Deadline& deadline,
                          const char* what) {
  ClientHello hello{kHelloMagic, kProtocolVersion, {}};
  MIXCCL_CHECK(randomBytes(hello.nonce, kNonceBytes));
  MIXCCL_CHECK(sendAllBefore(s, &hello, sizeof(hello), deadline, what));
  ServerChallenge ch;
  MIXCCL_CHECK(recvAllBefore(s, &ch, sizeof(ch), deadline, what));
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

Result authenticateServer(const Socket& s, const Secret& secret, const Deadline& deadline,
                          const char* what) {
  ClientHello hello;
  std::string why;
  Result r = recvAllQuietly(s, &hello, sizeof(hello), deadline, &why);
  if (r != mixcclSuccess)
    return raiseError(r, "refused %s: it %s before its handshake", what,
                      r == mixcclRemoteError ? why.c_str() : "sent nothing");
  if (hello.magic != kHelloMagic || hello.version != kProtocolVersion)
    return raiseError(mixcclRemoteError, "refused %s: not a mixccl peer", what);
  ServerChallenge ch{kHelloMagic, kProtocolVersion, {}, {}};
  MIXCCL_CHECK(randomBytes(ch.nonce, kNonceBytes));
  MIXCCL_CHECK(computeMac(secret, "server", hello.nonce, ch.nonce, ch.mac));
  MIXCCL_CHECK(sendAllBefore(s, &ch, sizeof(ch), deadline, what));
  ClientProof proof;
  r = recvAllQuietly(s, &proof, sizeof(proof), deadline, &why);
  if (r != mixcclSuccess)
    return raiseError(r, "refused %s: it %s instead of proving it holds the secret", what,
                      r == mixcclRemoteError ? why.c_str() : "sent nothing");
  if (memcmp(proof.mac, kWrongSecretVerdict, kMacBytes) == 0)
    return raiseError(mixcclRemoteError,
                      "refused %s: authentication failed (wrong secret): the peer holds a "
                      "different secret (it found this side's proof wrong); %s", what, kSameSecret);
  uint8_t expected[kMacBytes];
  MIXCCL_CHECK(computeMac(secret, "client", hello.nonce, ch.nonce, expected));
  if (CRYPTO_memcmp(expected, proof.mac, kMacBytes) != 0)
    return raiseError(mixcclRemoteError,
                      "refused %s: authentication failed (wrong secret): its proof does not match "
                      "this side's secret", what);
  return mixcclSuccess;
}

}  // namespace mixccl
