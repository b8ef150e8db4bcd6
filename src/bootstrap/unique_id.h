// The layout of mixcclUniqueId: the root's address, the secret and a communicator hash.
#pragma once

#include <cstdint>

#include "bootstrap/auth.h"
#include "bootstrap/socket_address.h"
#include "base/result.h"
#include "mixccl.h"

namespace mixccl {

struct UniqueIdData {
  uint32_t magic;
  uint32_t version;
  WireAddress root;
  Secret secret;
  uint64_t commHash;  // random; names the communicator in logs and handshakes
  uint32_t flags;     // kIdRootAtRank0: rank 0 hosts the root (MIXCCL_COMM_ID)
};

constexpr uint32_t kIdRootAtRank0 = 1;
static_assert(sizeof(UniqueIdData) <= MIXCCL_UNIQUE_ID_BYTES, "unique id too large");

void encodeUniqueId(const UniqueIdData& data, mixcclUniqueId* id);
Result decodeUniqueId(const mixcclUniqueId& id, UniqueIdData* data);

// A fresh id with a rendezvous root started in this process (ignores MIXCCL_COMM_ID).
Result createRootedUniqueId(UniqueIdData* data);
// A fresh secret and communicator hash without a root: for a communicator whose ranks exchange
// their peer info another way (mixcclCommSplit, over the parent's connections).
Result createRootlessUniqueId(UniqueIdData* data);
// The id every rank derives from MIXCCL_COMM_ID (and MIXCCL_COMM_SECRET).
Result uniqueIdFromEnv(const std::string& commId, const std::string& secretHex,
                       UniqueIdData* data);

}  // namespace mixccl
