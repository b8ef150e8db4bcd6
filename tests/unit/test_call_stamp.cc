// The call stamp's encoding (base/call_stamp.h): what it tells apart, and how it names a call,
// also from stamps a peer made up.
#include <gtest/gtest.h>

#include <string>

#include "base/call_stamp.h"
#include "base/collective_kind.h"
#include "mixccl.h"

namespace mixccl {
namespace {

CollDesc allReduce(uint64_t count) {
  CollDesc s;
  s.kind = (int32_t)CollKind::AllReduce;
  s.datatype = mixcclFloat;
  s.op = mixcclSum;
  s.count = count;
  return s;
}

TEST(CallStamp, NoCollectiveIsZeroAndSaysSo) {
  EXPECT_EQ(encodeCallStamp(CollDesc{}), 0u);
  EXPECT_EQ(describeCallStamp(0),
            "no collective (a point-to-point transfer or an internal exchange)");
}

TEST(CallStamp, EveryFieldTellsCallsApart) {
  const uint64_t base = encodeCallStamp(allReduce(262144));
  EXPECT_NE(base, 0u);
  EXPECT_NE(base, encodeCallStamp(allReduce(524288)));
  CollDesc s = allReduce(262144);
  s.datatype = mixcclInt32;
  EXPECT_NE(base, encodeCallStamp(s));
  s = allReduce(262144);
  s.op = mixcclMax;
  EXPECT_NE(base, encodeCallStamp(s));
  s = allReduce(262144);
  s.kind = (int32_t)CollKind::Broadcast;
  s.op = -1;
  s.root = 0;
  CollDesc t = s;
  t.root = 1;
  EXPECT_NE(encodeCallStamp(s), encodeCallStamp(t));
  EXPECT_NE(encodeCallStamp(s), base);
  // Counts beyond the exact field still differ (hashed).
  EXPECT_NE(encodeCallStamp(allReduce(1ull << 36)), encodeCallStamp(allReduce((1ull << 36) + 1)));
  EXPECT_NE(encodeCallStamp(allReduce(1ull << 40)), encodeCallStamp(allReduce(0)));
}

TEST(CallStamp, DescribesTheCallAsTheApiNamesIt) {
  EXPECT_EQ(describeCallStamp(encodeCallStamp(allReduce(262144))),
            "mixcclAllReduce (count 262144, datatype float, op sum)");
  CollDesc b;
  b.kind = (int32_t)CollKind::Broadcast;
  b.datatype = mixcclInt32;
  b.root = 3;
  b.count = 10;
  EXPECT_EQ(describeCallStamp(encodeCallStamp(b)),
            "mixcclBroadcast (count 10, datatype int32, root 3)");
  CollDesc u = allReduce(7);
  u.op = mixcclNumOps + 2;  // a user-created op
  EXPECT_EQ(describeCallStamp(encodeCallStamp(u)),
            "mixcclAllReduce (count 7, datatype float, a user-created op)");
  EXPECT_EQ(describeCallStamp(encodeCallStamp(allReduce(1ull << 40))),
            "mixcclAllReduce (count 2^35 or more, datatype float, op sum)");
}

TEST(CallStamp, ANamedMismatchSaysWhichCallIsWhose) {
  EXPECT_EQ(callMismatchMessage("rank 1 (h pid 2)", encodeCallStamp(allReduce(524288)), 0,
                                encodeCallStamp(allReduce(262144))),
            "rank 1 (h pid 2) called mixcclAllReduce (count 524288, datatype float, op sum) "
            "while this rank (rank 0) called mixcclAllReduce (count 262144, datatype float, op "
            "sum): mismatched calls (every rank must make the same collective calls in the same "
            "order)");
}

TEST(CallStamp, HostileStampsAreDescribedWithoutTrustingThem) {
  // Kind field 15 (no such collective), datatype 15, op 9: every field out of range.
  const uint64_t hostile = (15ull << 60) | (15ull << 56) | (9ull << 52) | 5;
  EXPECT_EQ(describeCallStamp(hostile),
            "an unknown collective 14 (count 5, datatype 15, op unknown)");
  for (uint64_t bits : {~0ull, 1ull << 63, 0x0fffffffffffffffull})
    EXPECT_FALSE(describeCallStamp(bits).empty());
}

}  // namespace
}  // namespace mixccl
