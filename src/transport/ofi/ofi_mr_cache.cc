#include "transport/ofi/ofi_mr_cache.h"
#include "transport/ofi/ofi_library.h"

#include <rdma/fi_errno.h>

#include <algorithm>

namespace mixccl {

struct OfiMrCache::Entry {
  uintptr_t begin = 0, end = 0;
  fid_mr* mr = nullptr;
  int refs = 0;
};

void OfiMrCache::setup(fid_domain* domain, fid_ep* ep, uint64_t mrMode) {
  domain_ = domain;
  ep_ = ep;
  mrMode_ = mrMode;
}

bool OfiMrCache::acquire(const void* buf, size_t len, void** desc, Entry** entry,
                         std::string* error) {
  *desc = nullptr;
  *entry = nullptr;
  if (!active() || len == 0) return true;  // a 0-byte message touches no memory
  uintptr_t b = (uintptr_t)buf, e = b + len;
  for (Entry* x : entries_)
    if (x->begin <= b && e <= x->end) {
      ++x->refs;
      *desc = fi_mr_desc(x->mr);
      *entry = x;
      return true;
    }
  fid_mr* mr = nullptr;
  int rc = fi_mr_reg(domain_, buf, len, FI_SEND | FI_RECV, 0, nextKey_++, 0, &mr, nullptr);
  if (rc != 0) {
    *error = std::string("fi_mr_reg of ") + std::to_string(len) + " bytes: " + ofiStrerror(-rc);
    return false;
  }
  if (mrMode_ & FI_MR_ENDPOINT) {
    rc = fi_mr_bind(mr, &ep_->fid, 0);
    if (rc == 0) rc = fi_mr_enable(mr);
    if (rc != 0) {
      fi_close(&mr->fid);
      *error = std::string("binding a registration to the endpoint (FI_MR_ENDPOINT): ") +
               ofiStrerror(-rc);
      return false;
    }
  }
  Entry* x = new Entry;
  x->begin = b;
  x->end = e;
  x->mr = mr;
  x->refs = 1;
  entries_.push_back(x);
  *desc = fi_mr_desc(mr);
  *entry = x;
  return true;
}

void OfiMrCache::release(Entry* entry) {
  if (!entry || --entry->refs > 0) return;
  entries_.erase(std::remove(entries_.begin(), entries_.end(), entry), entries_.end());
  fi_close(&entry->mr->fid);
  delete entry;
}

void OfiMrCache::clear() {
  for (Entry* x : entries_) {
    fi_close(&x->mr->fid);
    delete x;
  }
  entries_.clear();
}

}  // namespace mixccl
