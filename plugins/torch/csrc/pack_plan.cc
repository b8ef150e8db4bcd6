#include "pack_plan.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <cstdlib>
#include <string>

namespace mixccl_torch {

std::optional<size_t> packBelowBytesSetting() {
  const char* raw = std::getenv("MIXCCL_TORCH_PACK_BYTES");
  if (!raw || !*raw) return std::nullopt;  // unset or empty, as mixccl's own
  std::string text(raw);
  size_t unit = 1;
  if (!text.empty() && (text.back() == 'K' || text.back() == 'k')) unit = size_t(1) << 10;
  if (!text.empty() && (text.back() == 'M' || text.back() == 'm')) unit = size_t(1) << 20;
  std::string digits = unit == 1 ? text : text.substr(0, text.size() - 1);
  // 12 digits at most: no overflow, even in MiB.
  bool valid = !digits.empty() && digits.size() <= 12 &&
               std::all_of(digits.begin(), digits.end(),
                           [](char c) { return c >= '0' && c <= '9'; });
  TORCH_CHECK(valid, "mixccl: MIXCCL_TORCH_PACK_BYTES=", text, " is not a byte count (a decimal "
              "number, optionally with K or M; 0 turns packing off)");
  return std::stoull(digits) * unit;
}

PackBound packBoundFor(const std::optional<size_t>& setting, size_t shmSlotBytes) {
  if (setting) return {*setting, "MIXCCL_TORCH_PACK_BYTES=" + std::to_string(*setting)};
  if (shmSlotBytes > 0)
    return {0, "default: small collectives on shared-memory slots of " +
                   std::to_string(shmSlotBytes) + " bytes, one call per tensor"};
  return {kDefaultPackBelowBytes, "default: no shared-memory slots, pack below " +
                                      std::to_string(kDefaultPackBelowBytes) + " bytes"};
}

PackPlan planPacking(const std::vector<PackCandidate>& candidates, size_t packBelowBytes) {
  PackPlan plan;
  std::vector<int> groupKinds;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const PackCandidate& c = candidates[i];
    if (!c.eligible || c.bytes >= packBelowBytes) {
      plan.alone.push_back(i);
      continue;
    }
    auto kind = std::find(groupKinds.begin(), groupKinds.end(), c.kind);
    if (kind == groupKinds.end()) {
      groupKinds.push_back(c.kind);
      plan.packed.push_back({i});
    } else {
      plan.packed[kind - groupKinds.begin()].push_back(i);
    }
  }
  // A group of one has no call to save.
  for (auto g = plan.packed.begin(); g != plan.packed.end();) {
    if (g->size() > 1) {
      ++g;
      continue;
    }
    plan.alone.push_back(g->front());
    g = plan.packed.erase(g);
  }
  std::sort(plan.alone.begin(), plan.alone.end());
  return plan;
}

}  // namespace mixccl_torch
