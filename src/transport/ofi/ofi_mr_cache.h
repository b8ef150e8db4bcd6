// Memory registration for providers whose mr_mode asks for it (FI_MR_LOCAL: every buffer
// handed to a send or receive needs a descriptor; FI_MR_ENDPOINT: registrations are bound to
// the endpoint and enabled; FI_MR_PROV_KEY / FI_MR_VIRT_ADDR / FI_MR_ALLOCATED: accepted, they
// only matter for RMA, which mixccl does not use). Providers that need none (tcp;ofi_rxm,
// shm here) skip it entirely: acquire() then gives a null descriptor.
//
// The cache shares one registration among the operations in flight over the same memory (the
// pieces of a ring step, a bye's counter) and drops it when the last one finishes. It keeps no
// registration of memory nobody is using: mixccl cannot see the application free and reuse a
// buffer, and a registration kept past free() would pin the old pages, so data would land
// where the application no longer looks. Providers that register through the kernel (verbs,
// efa) keep their own cache behind fi_mr_reg, with a memory monitor that does see free(), so
// re-registering recently used memory is cheap there.
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace mixccl {

class OfiMrCache {
 public:
  struct Entry;

  OfiMrCache() = default;
  OfiMrCache(const OfiMrCache&) = delete;
  OfiMrCache& operator=(const OfiMrCache&) = delete;
  ~OfiMrCache() { clear(); }

  // domain/ep: where registrations are made and, with FI_MR_ENDPOINT, bound.
  void setup(fid_domain* domain, fid_ep* ep, uint64_t mrMode);
  bool active() const { return (mrMode_ & FI_MR_LOCAL) != 0; }

  // A descriptor for [buf, buf + len) (null where the provider needs none) and the entry to
  // release() when the operation is done (null then too). On failure *error says why.
  bool acquire(const void* buf, size_t len, void** desc, Entry** entry, std::string* error);
  void release(Entry* entry);
  // Closes every registration (after the endpoint is closed: nothing can use them then).
  void clear();
  size_t registrations() const { return entries_.size(); }

 private:
  fid_domain* domain_ = nullptr;
  fid_ep* ep_ = nullptr;
  uint64_t mrMode_ = 0;
  uint64_t nextKey_ = 1;  // requested keys must be unique unless the provider picks them
  std::vector<Entry*> entries_;
};

}  // namespace mixccl
