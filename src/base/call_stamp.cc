#include "base/call_stamp.h"

#include <algorithm>

#include "base/collective_kind.h"
#include "base/type_names.h"

namespace mixccl {
namespace {

constexpr int kCountBits = 36;
constexpr int kRootBits = 16;
constexpr uint64_t kCountMask = (1ull << kCountBits) - 1;
constexpr uint64_t kRootMask = (1ull << kRootBits) - 1;

uint64_t countField(uint64_t count) {
  if (count < kStampLargeCount) return count;
  // splitmix64's finaliser: every bit of count reaches the 35 kept.
  uint64_t h = count;
  h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
  h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
  h ^= h >> 31;
  return kStampLargeCount | (h & (kStampLargeCount - 1));
}

uint64_t opField(int32_t op) {
  if (op < 0) return kStampNoOp;
  return isValidRedOp(op) ? (uint64_t)op : (uint64_t)kStampUserOp;
}

}  // namespace

uint64_t encodeCallStamp(const CollDesc& s) {
  if (s.kind < 0 || s.kind >= kNumCollKinds) return 0;
  uint64_t root = s.root < 0 ? 0 : std::min<uint64_t>((uint64_t)s.root + 1, kRootMask);
  return ((uint64_t)(s.kind + 1) << 60) | ((uint64_t)(s.datatype & 0xf) << 56) |
         (opField(s.op) << 52) | (root << kCountBits) | countField(s.count);
}

std::string describeCallStamp(uint64_t stamp) {
  if (stamp == 0) return "no collective (a point-to-point transfer or an internal exchange)";
  int kindField = (int)(stamp >> 60);
  CollKind kind;
  std::string s = collKindFromInt(kindField - 1, &kind)
                      ? collSpec(kind).apiName
                      : "an unknown collective " + std::to_string(kindField - 1);
  uint64_t count = stamp & kCountMask;
  s += count & kStampLargeCount ? " (count 2^35 or more" : " (count " + std::to_string(count);
  int type = (int)((stamp >> 56) & 0xf);
  s += ", datatype ";
  s += isValidDataType(type) ? dataTypeName((mixcclDataType_t)type) : std::to_string(type).c_str();
  int op = (int)((stamp >> 52) & 0xf);
  if (op == kStampUserOp)
    s += ", a user-created op";
  else if (op != kStampNoOp)
    s += std::string(", op ") + (isValidRedOp(op) ? redOpName((mixcclRedOp_t)op) : "unknown");
  uint64_t root = (stamp >> kCountBits) & kRootMask;
  if (root == kRootMask)
    s += ", root 65534 or more";
  else if (root)
    s += ", root " + std::to_string(root - 1);
  return s + ")";
}

std::string callMismatchMessage(const std::string& peerName, uint64_t theirs, int myRank,
                                uint64_t mine) {
  return peerName + " called " + describeCallStamp(theirs) + " while this rank (rank " +
         std::to_string(myRank) + ") called " + describeCallStamp(mine) +
         ": mismatched calls (every rank must make the same collective calls in the same order)";
}

}  // namespace mixccl
