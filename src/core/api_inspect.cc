// mixcclCommInspect: what a communicator chose (the transport of each peer, the algorithm of a
// collective of a given size, the domains and adaptors), as text under a key. Tests and tools
// assert these choices through it instead of counting log lines, which change with wording.
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "algo/algorithms.h"
#include "adaptors/adaptor_loader.h"
#include "algo/host_map.h"
#include "core/api_support.h"
#include "core/collective_dispatch.h"

using namespace mixccl;

namespace {

const char* const kFn = "mixcclCommInspect";

// The decimal number text (digits only: no sign, no blanks), or false.
bool parseDecimal(const std::string& text, unsigned long long* out) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) return false;
  errno = 0;
  *out = strtoull(text.c_str(), nullptr, 10);
  return errno == 0;
}

bool startsWith(const std::string& s, const char* prefix) {
  return s.compare(0, strlen(prefix), prefix) == 0;
}

// A rank of comm named by the text after the key's prefix.
Result parseRank(const Comm* comm, const std::string& key, const std::string& text, int* rank) {
  unsigned long long r = 0;
  if (!parseDecimal(text, &r))
    return raiseError(mixcclInvalidArgument, "%s: key '%s': '%s' is not a rank number", kFn,
                      key.c_str(), text.c_str());
  if (r >= (unsigned long long)comm->nranks)
    return raiseError(mixcclInvalidArgument, "%s: key '%s': no rank %s in this communicator of %d "
                      "ranks", kFn, key.c_str(), text.c_str(), comm->nranks);
  *rank = (int)r;
  return mixcclSuccess;
}

Result transportTo(const Comm* comm, const std::string& key, const std::string& peerText,
                   std::string* value) {
  int peer = 0;
  MIXCCL_CHECK(parseRank(comm, key, peerText, &peer));
  if (peer == comm->rank)
    return raiseError(mixcclInvalidArgument, "%s: key '%s': rank %d is this rank (a transport "
                      "joins two ranks)", kFn, key.c_str(), peer);
  *value = comm->proxy->transportName(peer);
  return mixcclSuccess;
}

// Why that transport (transport/net_choice.h), e.g. "MIXCCL_NET=ucx: every pair".
Result transportWhy(const Comm* comm, const std::string& key, const std::string& peerText,
                    std::string* value) {
  MIXCCL_CHECK(transportTo(comm, key, peerText, value));
  int peer = 0;
  MIXCCL_CHECK(parseRank(comm, key, peerText, &peer));
  if (comm->connector) *value = comm->connector->transportWhy(peer);
  else *value = (size_t)peer < comm->transportWhy.size() ? comm->transportWhy[peer] : "";
  return mixcclSuccess;
}

// What collective_dispatch.cc would run (algorithmName), so the answer cannot drift from it.
Result algorithmFor(const Comm* comm, const std::string& key, CollKind kind,
                    const std::string& bytesText, std::string* value) {
  unsigned long long bytes = 0;
  if (!parseDecimal(bytesText, &bytes))
    return raiseError(mixcclInvalidArgument, "%s: key '%s': '%s' is not a byte count", kFn,
                      key.c_str(), bytesText.c_str());
  *value = algorithmName(comm, kind, (size_t)bytes);
  return mixcclSuccess;
}

std::string domainIndices(const Comm* comm) {
  std::string s;
  for (size_t r = 0; r < comm->domainMap.domainOf.size(); ++r)
    s += (r ? "," : "") + std::to_string(comm->domainMap.domainOf[r]);
  return s;
}

Result valueOf(const Comm* comm, const std::string& key, std::string* value) {
  if (startsWith(key, "transport.")) return transportTo(comm, key, key.substr(10), value);
  if (startsWith(key, "transport_why.")) return transportWhy(comm, key, key.substr(14), value);
  if (startsWith(key, "transport_detail.")) {
    MIXCCL_CHECK(transportTo(comm, key, key.substr(17), value));
    *value = comm->proxy->transportDetail(std::stoi(key.substr(17)));
    return mixcclSuccess;
  }
  if (startsWith(key, "device_direct.")) {
    MIXCCL_CHECK(transportTo(comm, key, key.substr(14), value));
    *value = comm->deviceDirect.why[std::stoi(key.substr(14))];
    return mixcclSuccess;
  }
  if (startsWith(key, "algo.allreduce.")) return algorithmFor(comm, key, CollKind::AllReduce, key.substr(15), value);
  if (startsWith(key, "algo.allgather.")) return algorithmFor(comm, key, CollKind::AllGather, key.substr(15), value);
  if (startsWith(key, "algo.broadcast.")) return algorithmFor(comm, key, CollKind::Broadcast, key.substr(15), value);
  if (startsWith(key, "algo.reduce.")) return algorithmFor(comm, key, CollKind::Reduce, key.substr(12), value);
  // The sizes the communicator tunes itself with (algo/tuning.h) and why.
  if (key == "tuning") {
    *value = comm->tuning.describe();
    return mixcclSuccess;
  }
  if (key == "tuning.chunk_bytes") {
    *value = std::to_string(comm->tuning.chunkBytes);
    return mixcclSuccess;
  }
  if (key == "tuning.rh_threshold_bytes") {
    *value = std::to_string(comm->tuning.rhThresholdBytes);
    return mixcclSuccess;
  }
  if (key == "tuning.socket_buffer_bytes") {
    *value = std::to_string(comm->tuning.socketBufferBytes);
    return mixcclSuccess;
  }
  // MIXCCL_CONNECT as applied: "eager" or "lazy", and why (core/connect_mode.h); how many
  // peers this rank is connected to.
  if (key == "connect") {
    *value = comm->lazyConnect ? "lazy" : "eager";
    return mixcclSuccess;
  }
  if (key == "connect_why") {
    *value = comm->connectWhy;
    return mixcclSuccess;
  }
  if (key == "connected_peers") {
    *value = std::to_string(comm->proxy->connectedPeers());
    return mixcclSuccess;
  }
  if (key == "domains") {
    *value = domainIndices(comm);
    return mixcclSuccess;
  }
  // The ranks grouped by host as the host-hierarchical collectives see them (algo/host_map.h).
  if (key == "hosts") {
    *value = describeHosts(comm->hostMap);
    return mixcclSuccess;
  }
  if (key == "shm_slot_bytes") {
    *value = std::to_string(comm->shmSlots ? comm->shmSlots->slotBytes() : 0);
    return mixcclSuccess;
  }
  if (key == "memory") {
    *value = comm->adaptor->table->memoryKind == MIXCCL_ADAPTOR_DEVICE_MEMORY ? "device" : "host";
    return mixcclSuccess;
  }
  if (startsWith(key, "adaptor.")) {
    int r = 0;
    MIXCCL_CHECK(parseRank(comm, key, key.substr(8), &r));
    *value = comm->domainMap.domains[comm->domainMap.domainOf[r]].adaptor;
    return mixcclSuccess;
  }
  return raiseError(mixcclInvalidArgument, "%s: unknown key '%s' (keys: transport.<peer>, "
                    "transport_why.<peer>, transport_detail.<peer>, device_direct.<peer>, algo.allreduce.<bytes>, algo.allgather.<bytes>, algo.broadcast.<bytes>, algo.reduce.<bytes>, tuning, tuning.chunk_bytes, tuning.rh_threshold_bytes, tuning.socket_buffer_bytes, connect, connect_why, connected_peers, domains, hosts, adaptor.<rank>, memory, shm_slot_bytes)",
                    kFn, key.c_str());
}

Result inspect(Comm* comm, const char* key, char* value, size_t valueSize) {
  if (!key) return raiseError(mixcclInvalidArgument, "%s: key is NULL", kFn);
  if (!value) return raiseError(mixcclInvalidArgument, "%s: key '%s': value is NULL", kFn, key);
  MIXCCL_CHECK(checkCommReady(kFn, comm));
  std::string text;
  MIXCCL_CHECK(valueOf(comm, key, &text));
  if (text.size() + 1 > valueSize)
    return raiseError(mixcclInvalidArgument, "%s: key '%s': the value '%s' needs %zu bytes, "
                      "valueSize is %zu", kFn, key, text.c_str(), text.size() + 1, valueSize);
  memcpy(value, text.c_str(), text.size() + 1);
  return mixcclSuccess;
}

}  // namespace

MIXCCL_API mixcclResult_t mixcclCommInspect(mixcclComm_t comm, const char* key, char* value,
                                            size_t valueSize) {
  CommRef ref(comm);
  if (!ref) return badComm(kFn, comm);
  return finishCall(ref.get(), inspect(ref.get(), key, value, valueSize));
}
