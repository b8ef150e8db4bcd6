// The sizes a communicator derives from the machine (algo/tuning.h), from injected cache sizes,
// the overrides, and the agreement over ranks.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "algo/tuning.h"

namespace mixccl {
namespace {

constexpr uint64_t KiB = 1 << 10, MiB = 1 << 20;

Tuning derived(uint64_t l2PerCore, uint64_t l3PerCore) {
  TuningInputs in;
  in.l2PerCore = l2PerCore;
  in.l3PerCore = l3PerCore;
  return deriveTuning(in, TuningOverrides{});
}

TEST(Tuning, TheMeasuredVmKeepsTheOldConstants) {
  // lscpu "AMD EPYC", 2 cores: L2 1 MiB per core, L3 32 MiB shared by 2 cores.
  TopoCaches caches;
  caches.l2 = {1 * MiB, 1, 2};
  caches.l3 = {32 * MiB, 2, 1};
  const Tuning t = deriveTuning(tuningInputsFrom(caches, 2, 2), TuningOverrides{});
  EXPECT_EQ(t.chunkBytes, 256 * KiB);
  EXPECT_EQ(t.rhThresholdBytes, 4 * MiB);
  EXPECT_EQ(t.socketBufferBytes, (int)(4 * MiB));
  EXPECT_FALSE(t.chunkSet);
  EXPECT_FALSE(t.rhSet);
  EXPECT_EQ(t.chunkWhy, "L2 1024 KiB per core / 4, within [64, 1024] KiB: 256 KiB");
  EXPECT_EQ(t.rhWhy, "L3 16384 KiB per core / 4, within [1024, 16384] KiB: 4096 KiB");
}

TEST(Tuning, SocketBuffersShareTheL3AmongTheRanksOfTheHost) {
  TopoCaches vm;  // 32 MiB of L3 over 2 cores
  vm.l2 = {1 * MiB, 1, 2};
  vm.l3 = {32 * MiB, 2, 1};
  auto buffers = [](const TopoCaches& c, int cores, int ranks) {
    return deriveTuning(tuningInputsFrom(c, cores, ranks), TuningOverrides{}).socketBufferBytes;
  };
  EXPECT_EQ(buffers(vm, 2, 2), (int)(4 * MiB));    // measured best on 2 ranks
  EXPECT_EQ(buffers(vm, 2, 4), (int)(1 * MiB));    // and on 4 (2 ranks per core)
  EXPECT_EQ(buffers(vm, 2, 8), (int)(256 * KiB));  // 4 per core: the floor
  EXPECT_EQ(buffers(vm, 2, 3), (int)(1 * MiB));    // 32 MiB / 3 / 4 / 1.5 = 1.8 MiB
  EXPECT_EQ(buffers(vm, 0, 4), (int)(2 * MiB));    // cores unknown: no oversubscription
  EXPECT_EQ(deriveTuning(tuningInputsFrom(vm, 2, 4), TuningOverrides{}).socketWhy,
            "L3 32768 KiB / 4 rank(s) of this host / 4 / 2 rank(s) per core (2 cores), within "
            "[256, 4096] KiB: 1024 KiB");
  TopoCaches xeon;  // 2 cores, 260 MiB of L3
  xeon.l3 = {260 * MiB, 2, 1};
  EXPECT_EQ(buffers(xeon, 2, 2), (int)(4 * MiB));
  EXPECT_EQ(buffers(xeon, 2, 8), (int)(2 * MiB));
  TopoCaches twoL3;  // two 16 MiB L3s of 8 cores each: 32 MiB over 16 cores
  twoL3.l3 = {16 * MiB, 8, 2};
  EXPECT_EQ(buffers(twoL3, 16, 8), (int)(1 * MiB));
  EXPECT_EQ(buffers(TopoCaches{}, 2, 4), (int)(4 * MiB));  // L3 not reported
}

TEST(Tuning, ChunkIsAQuarterOfOneCoresL2) {
  EXPECT_EQ(derived(2 * MiB, 0).chunkBytes, 512 * KiB);
  EXPECT_EQ(derived(512 * KiB, 0).chunkBytes, 128 * KiB);
  EXPECT_EQ(derived(1280 * KiB, 0).chunkBytes, 256 * KiB);  // rounded down to a power of two
  EXPECT_EQ(derived(128 * KiB, 0).chunkBytes, 64 * KiB);    // at least 64 KiB
  EXPECT_EQ(derived(16 * MiB, 0).chunkBytes, 1 * MiB);      // at most 1 MiB
  EXPECT_EQ(derived(0, 0).chunkBytes, 256 * KiB);           // L2 not reported
  EXPECT_EQ(derived(0, 0).chunkWhy, "L2 not reported: 256 KiB");
}

TEST(Tuning, AnL2SharedByCoresCountsPerCore) {
  TopoCaches caches;
  caches.l2 = {4 * MiB, 4, 1};  // a 4-core cluster's L2: 1 MiB per core
  EXPECT_EQ(deriveTuning(tuningInputsFrom(caches), TuningOverrides{}).chunkBytes, 256 * KiB);
  caches.l2 = {2 * MiB, 0, 1};  // cores unknown: one
  EXPECT_EQ(deriveTuning(tuningInputsFrom(caches), TuningOverrides{}).chunkBytes, 512 * KiB);
}

TEST(Tuning, ThresholdFollowsOneCoresL3) {
  EXPECT_EQ(derived(0, 4 * MiB).rhThresholdBytes, 1 * MiB);
  EXPECT_EQ(derived(0, 8 * MiB).rhThresholdBytes, 2 * MiB);
  EXPECT_EQ(derived(0, 130 * MiB).rhThresholdBytes, 16 * MiB);  // 2-core Xeon, 260 MiB L3
  EXPECT_EQ(derived(0, 1 * MiB).rhThresholdBytes, 1 * MiB);
  EXPECT_EQ(derived(0, 0).rhThresholdBytes, 4 * MiB);
}

TEST(Tuning, OverridesAreTakenAsGiven) {
  TuningOverrides over;
  over.chunkBytes = 100000;
  over.rhThresholdBytes = 0;
  over.socketBufferBytes = 0;
  TuningInputs in;
  in.l2PerCore = 1 * MiB;
  in.l3PerCore = 16 * MiB;
  const Tuning t = deriveTuning(in, over);
  EXPECT_EQ(t.chunkBytes, 100000u);
  EXPECT_TRUE(t.chunkSet);
  EXPECT_EQ(t.chunkWhy, "MIXCCL_CHUNK_BYTES");
  EXPECT_EQ(t.rhThresholdBytes, 0u);
  EXPECT_TRUE(t.rhSet);
  EXPECT_EQ(t.socketBufferBytes, 0);
  EXPECT_EQ(t.socketWhy, "MIXCCL_SOCKET_BUFFER_BYTES=0: the kernel's autotuning");
}

std::vector<TuningWire> wires(const std::vector<Tuning>& ranks) {
  std::vector<TuningWire> all;
  for (const Tuning& t : ranks) all.push_back(tuningToWire(t));
  return all;
}

TEST(Tuning, RanksWithDifferentCachesAgreeOnTheSmallest) {
  const std::vector<Tuning> ranks = {derived(2 * MiB, 130 * MiB), derived(512 * KiB, 4 * MiB),
                                     derived(1 * MiB, 16 * MiB)};
  for (size_t r = 0; r < ranks.size(); ++r) {
    const Tuning t = combineTuning(ranks[r], wires(ranks));
    EXPECT_EQ(t.chunkBytes, 128 * KiB) << "rank " << r;
    EXPECT_EQ(t.rhThresholdBytes, 1 * MiB) << "rank " << r;
    // The socket buffers stay each rank's own.
    EXPECT_EQ(t.socketBufferBytes, ranks[r].socketBufferBytes) << "rank " << r;
  }
  const Tuning first = combineTuning(ranks[0], wires(ranks));
  EXPECT_EQ(first.chunkWhy, "rank 1's 131072, the smallest over the ranks; this rank's own: "
                            "524288 from L2 2048 KiB per core / 4, within [64, 1024] KiB: 512 KiB");
  // The rank that had the smallest keeps its own reason.
  EXPECT_EQ(combineTuning(ranks[1], wires(ranks)).chunkWhy, ranks[1].chunkWhy);
}

TEST(Tuning, AnExplicitSettingOnAnyRankWinsOverDerivedValues) {
  TuningOverrides over;
  over.chunkBytes = 1 * MiB;
  over.rhThresholdBytes = 64 * MiB;
  TuningInputs small;
  small.l2PerCore = 512 * KiB;
  small.l3PerCore = 4 * MiB;
  const std::vector<Tuning> ranks = {deriveTuning(small, TuningOverrides{}),
                                     deriveTuning(small, over)};
  for (const Tuning& mine : ranks) {
    const Tuning t = combineTuning(mine, wires(ranks));
    EXPECT_EQ(t.chunkBytes, 1 * MiB);
    EXPECT_TRUE(t.chunkSet);
    EXPECT_EQ(t.rhThresholdBytes, 64 * MiB);
  }
  EXPECT_EQ(combineTuning(ranks[0], wires(ranks)).rhWhy.substr(0, 62),
            "rank 1's 67108864 (MIXCCL_RH_THRESHOLD), the smallest over the");
  // Different settings: the smallest of them.
  TuningOverrides other = over;
  other.chunkBytes = 512 * KiB;
  const std::vector<Tuning> three = {ranks[0], ranks[1], deriveTuning(small, other)};
  EXPECT_EQ(combineTuning(three[0], wires(three)).chunkBytes, 512 * KiB);
}

TEST(Tuning, DescribeNamesEverySizeAndWhy) {
  EXPECT_EQ(derived(1 * MiB, 16 * MiB).describe(),
            "chunk 262144 bytes (L2 1024 KiB per core / 4, within [64, 1024] KiB: 256 KiB); "
            "rh threshold 4194304 bytes (L3 16384 KiB per core / 4, within [1024, 16384] KiB: "
            "4096 KiB); same-host SO_SNDBUF/SO_RCVBUF 4194304 bytes (L3 not reported: 4096 KiB)");
}

}  // namespace
}  // namespace mixccl
