#include "comm.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

namespace mixccl_torch {

int timeoutSeconds(std::chrono::milliseconds timeout) {
  long long s = (timeout.count() + 999) / 1000;
  if (s < 1) s = 1;
  if (s > 0x7fffffff) s = 0x7fffffff;
  return static_cast<int>(s);
}

namespace {

mixcclConfig_t configFor(std::chrono::milliseconds timeout, const std::string& name) {
  mixcclConfig_t cfg = MIXCCL_CONFIG_INITIALIZER;
  cfg.timeout = timeoutSeconds(timeout);
  cfg.commName = name.c_str();  // copied by mixccl during init
  return cfg;
}

void throwIfFailed(mixcclResult_t r, mixcclComm_t comm, const char* what) {
  if (r == mixcclSuccess) return;
  const char* detail = mixcclGetLastError(comm);
  std::string msg = std::string("mixccl ") + what + ": " +
                    (detail && *detail ? detail : mixcclGetErrorString(r));
  C10_THROW_ERROR(DistBackendError, msg);
}

// Waits for key by polling check() rather than store.wait(): a TCPStore client holds its one
// connection for the whole of a wait, so two lanes of this process forming at once (one waiting
// for its peer's id, the other publishing its own) would block each other until the timeout.
void waitForKey(c10d::Store& store, const std::string& key, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::chrono::milliseconds pause(1);
  while (!store.check({key})) {
    if (std::chrono::steady_clock::now() >= deadline)
      C10_THROW_ERROR(DistBackendError, "mixccl: timed out after " +
                                            std::to_string(timeout.count()) +
                                            " ms waiting for the unique id under store key '" +
                                            key + "'");
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(50));
  }
}

}  // namespace

std::unique_ptr<Comm> Comm::viaStore(c10d::Store& store, const std::string& key, int rank,
                                     int size, std::chrono::milliseconds timeout,
                                     const std::string& name, bool blocking,
                                     const char* connect) {
  mixcclUniqueId id;
  if (rank == 0) {
    throwIfFailed(mixcclGetUniqueId(&id), nullptr, "getUniqueId");
    std::vector<uint8_t> bytes(sizeof(id));
    std::memcpy(bytes.data(), &id, sizeof(id));
    store.set(key, bytes);
  } else {
    waitForKey(store, key, timeout);
    std::vector<uint8_t> bytes = store.get(key);
    TORCH_CHECK(bytes.size() == sizeof(id), "mixccl: the unique id under store key '", key,
                "' has ", bytes.size(), " bytes, expected ", sizeof(id));
    std::memcpy(&id, bytes.data(), sizeof(id));
  }
  mixcclConfig_t cfg = configFor(timeout, name);
  cfg.blocking = blocking ? 1 : 0;
  cfg.connect = connect;
  mixcclComm_t comm = nullptr;
  mixcclResult_t r = mixcclCommInitRankConfig(&comm, size, id, rank, &cfg);
  if (!blocking && r == mixcclInProgress) r = mixcclSuccess;
  throwIfFailed(r, nullptr, "init");
  // Every rank has read the id once the init completed. Removing it keeps a later group on the
  // same store (a new init_process_group after destroy_process_group) from reading a stale id.
  if (rank == 0 && blocking) store.deleteKey(key);
  return std::unique_ptr<Comm>(new Comm(comm, rank, size, blocking));
}

std::unique_ptr<Comm> Comm::split(Comm& parent, int color, int key,
                                  std::chrono::milliseconds timeout, const std::string& name) {
  mixcclConfig_t cfg = configFor(timeout, name);
  mixcclComm_t child = nullptr;
  parent.check(mixcclCommSplit(parent.comm_, color < 0 ? MIXCCL_SPLIT_NOCOLOR : color, key,
                               &child, &cfg),
               "split");
  if (!child) return nullptr;
  int rank = 0, size = 0;
  mixcclCommUserRank(child, &rank);
  mixcclCommCount(child, &size);
  return std::unique_ptr<Comm>(new Comm(child, rank, size));
}

std::unique_ptr<Comm> Comm::shrink(Comm& parent, const std::vector<int>& excluded, int flags,
                                   std::chrono::milliseconds timeout, const std::string& name) {
  mixcclConfig_t cfg = configFor(timeout, name);
  mixcclComm_t child = nullptr;
  parent.check(mixcclCommShrink(parent.comm_, excluded.data(), static_cast<int>(excluded.size()),
                                &child, &cfg, flags),
               "shrink");
  int rank = 0, size = 0;
  mixcclCommUserRank(child, &rank);
  mixcclCommCount(child, &size);
  return std::unique_ptr<Comm>(new Comm(child, rank, size));
}

Comm::Comm(mixcclComm_t comm, int rank, int size, bool initialised)
    : comm_(comm), rank_(rank), size_(size) {
  // Asked here without throwing, so that a failure cannot leak the communicator: an adaptor
  // that cannot say is taken as host memory, as the host adaptor's.
  char value[16] = {0};
  deviceMemory_ = initialised &&
                  mixcclCommInspect(comm_, "memory", value, sizeof(value)) == mixcclSuccess &&
                  std::strcmp(value, "device") == 0;
}

Comm::~Comm() {
  // After an abort the handle is already released by mixcclCommAbort.
  if (!aborted_) mixcclCommDestroy(comm_);
}

void Comm::check(mixcclResult_t r, const char* what) const { throwIfFailed(r, comm_, what); }

void Comm::waitReady(std::chrono::milliseconds timeout) const {
  waitReady(timeout, [] { return false; });
}

bool Comm::healthy() const {
  mixcclResult_t state = mixcclSuccess;
  return mixcclCommGetAsyncError(comm_, &state) == mixcclSuccess &&
         (state == mixcclSuccess || state == mixcclInProgress);
}

bool Comm::waitReady(std::chrono::milliseconds timeout,
                     const std::function<bool()>& stop) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto pause = std::chrono::microseconds(50);
  for (;;) {
    mixcclResult_t state = mixcclInProgress;
    check(mixcclCommGetAsyncError(comm_, &state), "init");
    if (state != mixcclInProgress) {
      check(state, "init");
      return true;
    }
    if (stop()) return false;
    if (std::chrono::steady_clock::now() >= deadline)
      C10_THROW_ERROR(DistBackendError, "mixccl init: the communicator was not ready within " +
                                            std::to_string(timeout.count()) + " ms");
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(10000));
  }
}

void Comm::abort() {
  if (aborted_) return;
  aborted_ = true;
  mixcclCommAbort(comm_);
}

void Comm::revoke() {
  // Its result is not checked: a communicator that failed already told its peers then (a
  // revoke does nothing more there), and mixcclCommRevoke logs anything else itself.
  if (!aborted_) mixcclCommRevoke(comm_, MIXCCL_REVOKE_DEFAULT);
}

std::string Comm::memory() const {
  char value[16] = {0};
  check(mixcclCommInspect(comm_, "memory", value, sizeof(value)), "inspect");
  return value;
}

std::string Comm::inspect(const std::string& key) const {
  // Room for every value (docs/inspect.md): the longest, "domains", takes a number and a comma
  // per rank, "tuning" under 1 KiB.
  std::string value(std::max<size_t>(1024, size_t(size_) * 12 + 1), '\0');
  check(mixcclCommInspect(comm_, key.c_str(), &value[0], value.size()), "inspect");
  value.resize(std::strlen(value.c_str()));
  return value;
}

size_t Comm::shmSlotBytes() const { return std::stoull(inspect("shm_slot_bytes")); }

std::string Comm::adaptor() const { return inspect("adaptor." + std::to_string(rank_)); }

}  // namespace mixccl_torch
