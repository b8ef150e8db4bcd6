// The shared-memory ring's default size from injected cache sizes (transport/shm_sizing.h).
#include <gtest/gtest.h>

#include <string>

#include "transport/shm_sizing.h"

namespace mixccl {
namespace {

constexpr size_t KiB = 1 << 10, MiB = 1 << 20;
constexpr size_t kChunk = 256 * KiB;  // MIXCCL_CHUNK_BYTES' default

TEST(ShmSizing, TheL2OfOneCore) {
  EXPECT_EQ(shmRingBytesFor(1 * MiB, 1, kChunk, nullptr), 1 * MiB);  // this VM: unchanged
  EXPECT_EQ(shmRingBytesFor(2 * MiB, 1, kChunk, nullptr), 2 * MiB);
  EXPECT_EQ(shmRingBytesFor(4 * MiB, 1, kChunk, nullptr), 4 * MiB);
}

TEST(ShmSizing, AnL2SharedByCoresCountsPerCore) {
  EXPECT_EQ(shmRingBytesFor(16 * MiB, 4, kChunk, nullptr), 4 * MiB);  // a 4-core cluster's L2
  EXPECT_EQ(shmRingBytesFor(4 * MiB, 2, kChunk, nullptr), 2 * MiB);
  EXPECT_EQ(shmRingBytesFor(2 * MiB, 0, kChunk, nullptr), 2 * MiB);   // cores unknown: one
}

TEST(ShmSizing, RoundsDownToAPowerOfTwo) {
  EXPECT_EQ(shmRingBytesFor(3 * MiB, 1, kChunk, nullptr), 2 * MiB);  // never above the L2
  EXPECT_EQ(shmRingBytesFor(1280 * KiB, 1, kChunk, nullptr), 1 * MiB);
}

TEST(ShmSizing, AtLeastFourChunks) {
  // Small L2s (512 KiB, 256 KiB) keep 4 chunks in flight.
  EXPECT_EQ(shmRingBytesFor(512 * KiB, 1, kChunk, nullptr), 1 * MiB);
  EXPECT_EQ(shmRingBytesFor(256 * KiB, 1, 64 * KiB, nullptr), 256 * KiB);
  EXPECT_EQ(shmRingBytesFor(128 * KiB, 1, 16 * KiB, nullptr), 128 * KiB);
  // A chunk that is no power of two: 4 x 100 KiB rounds up to 512 KiB.
  EXPECT_EQ(shmRingBytesFor(256 * KiB, 1, 100 * KiB, nullptr), 512 * KiB);
}

TEST(ShmSizing, AtMostTheCap) {
  EXPECT_EQ(shmRingBytesFor(64 * MiB, 1, kChunk, nullptr), kShmRingMaxDerivedBytes);
  EXPECT_EQ(shmRingBytesFor(1 * MiB, 1, 4 * MiB, nullptr), kShmRingMaxDerivedBytes);
}

TEST(ShmSizing, UnknownL2KeepsTheFixedDefault) {
  std::string why;
  EXPECT_EQ(shmRingBytesFor(0, 1, kChunk, &why), kShmRingFallbackBytes);
  EXPECT_NE(why.find("not reported"), std::string::npos) << why;
}

TEST(ShmSizing, TheReasonNamesTheInputs) {
  std::string why;
  shmRingBytesFor(512 * KiB, 1, kChunk, &why);
  EXPECT_NE(why.find("L2 512 KiB per core"), std::string::npos) << why;
  EXPECT_NE(why.find("at least 4 chunks (1024 KiB)"), std::string::npos) << why;
}

// The rings to peers other than the ring neighbours follow what recursive halving sends the
// partner at distance d: a d/n share, so ring x d / (n/2), within [64 KiB, the ring].
TEST(ShmFarRingSizing, GrowsWithTheDistanceUpToHalfTheRanks) {
  EXPECT_EQ(shmFarRingBytesFor(1 * MiB, 16, 8), 1 * MiB);    // the first, largest exchange
  EXPECT_EQ(shmFarRingBytesFor(1 * MiB, 16, 4), 512 * KiB);
  EXPECT_EQ(shmFarRingBytesFor(1 * MiB, 16, 2), 256 * KiB);
  EXPECT_EQ(shmFarRingBytesFor(1 * MiB, 16, 3), 256 * KiB);  // distances round down
  EXPECT_EQ(shmFarRingBytesFor(1 * MiB, 64, 32), 1 * MiB);
  EXPECT_EQ(shmFarRingBytesFor(1 * MiB, 64, 8), 256 * KiB);
  EXPECT_EQ(shmFarRingBytesFor(1 * MiB, 256, 4), 64 * KiB);   // 32 KiB: the floor
  EXPECT_EQ(shmFarRingBytesFor(1 * MiB, 24, 12), 1 * MiB);    // beyond the power of two: full
  EXPECT_EQ(shmFarRingBytesFor(4096, 64, 2), 4096u);          // never above the ring itself
}

// A rank's rings for its collectives (2 neighbours + the recursive partners at 2, 4, ..., n/2)
// stay near 4 rings whatever the rank count: a host's shared memory grows linearly.
TEST(ShmFarRingSizing, ARanksCollectiveRingsStayNearFourRings) {
  for (int ranks = 4; ranks <= (1 << 16); ranks *= 2) {
    size_t total = 2 * MiB;
    for (int d = 2; d <= ranks / 2; d *= 2) total += shmFarRingBytesFor(1 * MiB, ranks, d);
    EXPECT_LE(total, 4 * MiB + 16 * kShmFarRingMinBytes) << ranks << " ranks";
  }
}

// The slots: 4 x nranks of them within one core's L2, a power of two, within 4-64 KiB.
TEST(ShmSlotSizing, FollowsTheL2AndTheRankCount) {
  EXPECT_EQ(shmSlotBytesFor(1 * MiB, 1, 2, nullptr), 64 * KiB);  // this VM, 2 and 4 ranks: the cap
  EXPECT_EQ(shmSlotBytesFor(1 * MiB, 1, 4, nullptr), 64 * KiB);
  EXPECT_EQ(shmSlotBytesFor(1 * MiB, 1, 8, nullptr), 32 * KiB);
  EXPECT_EQ(shmSlotBytesFor(1 * MiB, 1, 3, nullptr), 64 * KiB);  // 85 KiB rounds down, capped
  EXPECT_EQ(shmSlotBytesFor(512 * KiB, 1, 4, nullptr), 32 * KiB);
  EXPECT_EQ(shmSlotBytesFor(2 * MiB, 4, 8, nullptr), 16 * KiB);  // an L2 shared by 4 cores
}

TEST(ShmSlotSizing, StaysWithinTheBounds) {
  EXPECT_EQ(shmSlotBytesFor(256 * KiB, 1, 64, nullptr), kShmSlotMinBytes);
  EXPECT_EQ(shmSlotBytesFor(64 * MiB, 1, 2, nullptr), kShmSlotMaxBytes);
}

TEST(ShmSlotSizing, UnknownL2KeepsTheFixedDefault) {
  std::string why;
  EXPECT_EQ(shmSlotBytesFor(0, 1, 4, &why), kShmSlotFallbackBytes);
  EXPECT_NE(why.find("not reported"), std::string::npos) << why;
  shmSlotBytesFor(1 * MiB, 1, 8, &why);
  EXPECT_EQ(why, "L2 1024 KiB per core / (4 x 8 ranks) -> 32 KiB, within 4-64 KiB");
}

}  // namespace
}  // namespace mixccl
