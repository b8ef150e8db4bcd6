#include "registrations.h"

#include <map>
#include <memory>
#include <mutex>

namespace nccl_shim {
namespace {

struct Registration {
  ncclComm_t comm;
  void* buff;
  size_t size;
};

// Handle -> registration. A handle is the address of its record, which stays valid (owned
// here) until deregistration, so a handle can never be confused with a later one while live.
struct Registry {
  std::mutex mutex;
  std::map<void*, std::unique_ptr<Registration>> live;
};

Registry& registry() {
  static Registry* r = new Registry;  // outlives static destructors of programs that exit
  return *r;
}

}  // namespace

void dropRegistrations(ncclComm_t comm) {
  Registry& reg = registry();
  std::lock_guard<std::mutex> lock(reg.mutex);
  for (auto it = reg.live.begin(); it != reg.live.end();)
    it = it->second->comm == comm ? reg.live.erase(it) : std::next(it);
}

}  // namespace nccl_shim

using namespace nccl_shim;

NCCL_SHIM_API ncclResult_t ncclCommRegister(const ncclComm_t comm, void* buff, size_t size,
                                            void** handle) {
  const char* fn = "ncclCommRegister";
  if (ncclResult_t r = checkComm(comm); r != ncclSuccess) return r;
  if (handle == nullptr) return refuse(ncclInvalidArgument, "%s: handle is NULL", fn);
  if (buff == nullptr && size > 0) return refuse(ncclInvalidArgument, "%s: buff is NULL", fn);
  auto rec = std::make_unique<Registration>(Registration{comm, buff, size});
  void* h = rec.get();
  Registry& reg = registry();
  std::lock_guard<std::mutex> lock(reg.mutex);
  reg.live.emplace(h, std::move(rec));
  *handle = h;
  return ncclSuccess;
}
NCCL_SHIM_PROFILING_ALIAS(ncclCommRegister)

NCCL_SHIM_API ncclResult_t ncclCommDeregister(const ncclComm_t comm, void* handle) {
  const char* fn = "ncclCommDeregister";
  if (ncclResult_t r = checkComm(comm); r != ncclSuccess) return r;
  Registry& reg = registry();
  std::lock_guard<std::mutex> lock(reg.mutex);
  auto it = reg.live.find(handle);
  if (it == reg.live.end())
    return refuse(ncclInvalidArgument, "%s: %p is not a live registration handle", fn, handle);
  if (it->second->comm != comm)
    return refuse(ncclInvalidArgument, "%s: handle %p was registered on another communicator",
                  fn, handle);
  reg.live.erase(it);
  return ncclSuccess;
}
NCCL_SHIM_PROFILING_ALIAS(ncclCommDeregister)
