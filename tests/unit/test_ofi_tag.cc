// The libfabric tag layout (transport/ofi/ofi_tag.h): every field lands in its own bits, so a
// receive posted with ignore bits 0 matches only the one message it was meant for.
#ifdef MIXCCL_HAVE_OFI
#include <gtest/gtest.h>

#include <set>

#include "transport/ofi/ofi_tag.h"

namespace mixccl {
namespace {

TEST(OfiTag, FieldsOccupyTheirOwnBits) {
  EXPECT_EQ(ofiTag(0, false, 0, 0), 0u);
  EXPECT_EQ(ofiTag(0, false, 0, kOfiSeqMask), (uint64_t)kOfiSeqMask);
  EXPECT_EQ(ofiTag(0, false, 1, 0), 1ull << kOfiSeqBits);
  EXPECT_EQ(ofiTag(0, true, 0, 0), 1ull << (kOfiSeqBits + kOfiRankBits));
  EXPECT_EQ(ofiTag(1, false, 0, 0), 1ull << (kOfiSeqBits + kOfiRankBits + 1));
  EXPECT_EQ(ofiTag(kOfiKeyMask, true, kOfiMaxRanks - 1, kOfiSeqMask), UINT64_MAX);
}

TEST(OfiTag, ValuesBeyondAFieldDoNotSpillIntoAnother) {
  // The sequence wraps within its field; key bits above 27 are dropped, never reach the top.
  EXPECT_EQ(ofiTag(5, false, 3, kOfiSeqMask + 1), ofiTag(5, false, 3, 0));
  EXPECT_EQ(ofiTag(0xffffffffu, false, 0, 0), ofiTag(kOfiKeyMask, false, 0, 0));
}

TEST(OfiTag, DistinctMessagesGetDistinctTags) {
  std::set<uint64_t> seen;
  int n = 0;
  for (uint32_t key : {1u, 2u, 0x5a5a5au})
    for (bool bye : {false, true})
      for (int rank : {0, 1, 7, kOfiMaxRanks - 1})
        for (uint32_t seq : {0u, 1u, 2u, kOfiSeqMask}) {
          seen.insert(ofiTag(key, bye, rank, seq));
          ++n;
        }
  EXPECT_EQ((int)seen.size(), n);
}

}  // namespace
}  // namespace mixccl
#endif
