#include "core/comm_registry.h"

#include <mutex>
#include <unordered_set>

namespace mixccl {
namespace {
std::mutex registryMutex;
std::unordered_set<Comm*>& live() {
  static auto* set = new std::unordered_set<Comm*>;  // never destroyed: usable at exit
  return *set;
}
}  // namespace

void registerComm(Comm* comm) {
  std::lock_guard<std::mutex> lock(registryMutex);
  live().insert(comm);
}

bool unregisterComm(Comm* comm) {
  std::lock_guard<std::mutex> lock(registryMutex);
  return live().erase(comm) == 1;
}

CommRef::CommRef(Comm* comm) {
  std::lock_guard<std::mutex> lock(registryMutex);
  if (comm && live().count(comm)) {
    comm->refs.fetch_add(1);
    comm_ = comm;
  }
}

CommRef::~CommRef() {
  if (comm_) releaseComm(comm_);
}

void releaseComm(Comm* comm) {
  if (comm->refs.fetch_sub(1) == 1) delete comm;
}

}  // namespace mixccl
