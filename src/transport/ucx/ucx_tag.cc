#include "transport/ucx/ucx_tag.h"

#include <unordered_set>

#include "bootstrap/auth.h"

namespace mixccl {

Result makeUcxKeys(int nranks, std::vector<uint32_t>* keys) {
  keys->assign((size_t)nranks * 2, 0);
  std::unordered_set<uint32_t> used;
  for (uint32_t& k : *keys) {
    do {
      MIXCCL_CHECK(randomBytes(&k, sizeof(k)));
    } while (!used.insert(k).second);
  }
  return mixcclSuccess;
}

}  // namespace mixccl
