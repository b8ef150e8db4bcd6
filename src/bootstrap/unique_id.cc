#include "bootstrap/unique_id.h"

#include <openssl/evp.h>

#include <cstring>

#include "bootstrap/interfaces.h"
#include "bootstrap/root.h"
#include "base/env.h"
#include "base/error.h"
#include "base/log.h"

namespace mixccl {
namespace {
constexpr uint32_t kIdMagic = 0x4449584d;  // "MXID"
constexpr uint32_t kIdVersion = 1;

int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
}  // namespace

void encodeUniqueId(const UniqueIdData& data, mixcclUniqueId* id) {
  memset(id, 0, sizeof(*id));
  memcpy(id->internal, &data, sizeof(data));
}

Result decodeUniqueId(const mixcclUniqueId& id, UniqueIdData* data) {
  memcpy(data, id.internal, sizeof(*data));
  if (data->magic != kIdMagic || data->version != kIdVersion)
    return raiseError(mixcclInvalidArgument,
                      "invalid unique id (not made by mixcclGetUniqueId of this version)");
  SocketAddress root;
  return fromWire(data->root, &root);
}

Result createRootedUniqueId(UniqueIdData* data) {
  NetInterface iface;
  MIXCCL_CHECK(selectInterface(&iface));
  memset(data, 0, sizeof(*data));
  data->magic = kIdMagic;
  data->version = kIdVersion;
  MIXCCL_CHECK(randomBytes(&data->secret, sizeof(data->secret)));
  MIXCCL_CHECK(randomBytes(&data->commHash, sizeof(data->commHash)));
  SocketAddress bound;
  MIXCCL_CHECK(startRendezvousRoot(iface.address, data->secret, &bound));
  data->root = toWire(bound);
  return mixcclSuccess;
}

Result createRootlessUniqueId(UniqueIdData* data) {
  memset(data, 0, sizeof(*data));
  data->magic = kIdMagic;
  data->version = kIdVersion;
  MIXCCL_CHECK(randomBytes(&data->secret, sizeof(data->secret)));
  return randomBytes(&data->commHash, sizeof(data->commHash));
}

Result uniqueIdFromEnv(const std::string& commId, const std::string& secretHex,
                       UniqueIdData* data) {
  SocketAddress root;
  MIXCCL_CHECK(parseHostPort(commId, &root));
  memset(data, 0, sizeof(*data));
  data->magic = kIdMagic;
  data->version = kIdVersion;
  data->root = toWire(root);
  if (!secretHex.empty()) {
    if (secretHex.size() != 32)
      return raiseError(mixcclInvalidArgument, "MIXCCL_COMM_SECRET must be 32 hex digits");
    for (int i = 0; i < 16; ++i) {
      int hi = hexValue(secretHex[2 * i]), lo = hexValue(secretHex[2 * i + 1]);
      if (hi < 0 || lo < 0)
        return raiseError(mixcclInvalidArgument, "MIXCCL_COMM_SECRET must be 32 hex digits");
      data->secret.bytes[i] = (uint8_t)(hi * 16 + lo);
    }
  } else {
    // Without a secret from the launcher all ranks can only agree on one derived from the
    // address: it keeps unrelated jobs apart but is no protection against a deliberate peer.
    std::string seed = "mixccl-derived-secret|" + commId;
    uint8_t digest[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (!EVP_Digest(seed.data(), seed.size(), digest, &len, EVP_sha256(), nullptr))
      return raiseError(mixcclSystemError, "SHA-256 failed");
    memcpy(data->secret.bytes, digest, 16);
    WARN(kLogInit, "MIXCCL_COMM_ID is set without MIXCCL_COMM_SECRET: using a secret derived "
                   "from the address, which does not keep out a deliberate intruder");
  }
  // The comm hash only has to be the same on all ranks of this rendezvous.
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : commId) { h ^= c; h *= 1099511628211ull; }
  data->commHash = h;
  data->flags = kIdRootAtRank0;
  return mixcclSuccess;
}

}  // namespace mixccl
