#include "core/mismatch_check.h"

#include "algo/algorithms.h"
#include "base/error.h"

namespace mixccl {
namespace {

constexpr uint32_t kDescMagic = 0x4b434843;  // "CHCK"

// A descriptor from the wire, in words.
std::string describe(const CollDescWire& d) {
  CollDesc desc;
  desc.kind = d.kind;
  desc.datatype = d.datatype;
  desc.op = d.op;
  desc.root = d.root;
  desc.count = d.count;
  return describeCollDesc(desc);
}

bool sameCall(const CollDescWire& a, const CollDescWire& b) {
  return a.kind == b.kind && a.datatype == b.datatype && a.op == b.op && a.root == b.root &&
         a.count == b.count;
}

}  // namespace

Result compareCollDescs(const char* fn, const std::vector<CollDescWire>& all,
                        std::string* message, uint32_t* nextSeq) {
  if (all.empty()) return mixcclSuccess;
  uint32_t maxSeq = 0;
  for (const CollDescWire& d : all) maxSeq = d.seq > maxSeq ? d.seq : maxSeq;
  *nextSeq = maxSeq + 1;
  const CollDescWire& ref = all[0];
  for (size_t r = 0; r < all.size(); ++r) {
    const CollDescWire& d = all[r];
    if (d.magic != kDescMagic) {
      *message = std::string(fn) + ": rank " + std::to_string(r) +
                 " sent no collective descriptor (is MIXCCL_CHECK_MISMATCH=1 set on every rank?)";
      return mixcclInvalidUsage;
    }
    if (r == 0) continue;
    if (!sameCall(d, ref)) {
      *message = std::string(fn) + ": rank " + std::to_string(r) + " called " + describe(d) +
                 " while rank 0 called " + describe(ref);
      return mixcclInvalidUsage;
    }
    if (d.seq != ref.seq) {
      *message = std::string(fn) + ": rank " + std::to_string(r) + " is at collective #" +
                 std::to_string(d.seq) + " while rank 0 is at #" + std::to_string(ref.seq) +
                 " (a rank skipped or added a collective, e.g. one that failed its argument "
                 "checks): " + describe(d);
      return mixcclInvalidUsage;
    }
  }
  return mixcclSuccess;
}

Result checkCollectiveMatches(CollContext& ctx, const CollCall& call, uint32_t* seq) {
  const char* fn = call.spec().apiName;
  const CollDesc mine = collDescOf(call);
  CollDescWire w{kDescMagic, mine.kind, mine.datatype, mine.op, mine.root, *seq, mine.count};
  std::vector<CollDescWire> all((size_t)ctx.nranks);
  static_assert(sizeof(CollDescWire) % sizeof(uint64_t) == 0, "gathered as 64-bit words");
  MIXCCL_CHECK(ringAllGather(ctx, &w, all.data(), sizeof(w) / sizeof(uint64_t), mixcclUint64));
  MIXCCL_CHECK(ctx.transfers.waitAll());
  std::string message;
  uint32_t next = *seq + 1;
  Result r = compareCollDescs(fn, all, &message, &next);
  *seq = next;
  if (r != mixcclSuccess) return raiseError(r, "%s", message.c_str());
  return mixcclSuccess;
}

}  // namespace mixccl
