// Domains: MIXCCL_DOMAIN_SPLIT parsing, the domain map every rank builds, and the ownership
// ranges of the cross-domain exchange.
#include <gtest/gtest.h>

#include <cstring>

#include "algo/hierarchical.h"
#include "topology/domains.h"

namespace mixccl {
namespace {

std::vector<PeerInfo> peersWith(const std::vector<std::pair<const char*, int>>& adaptorColor) {
  std::vector<PeerInfo> peers(adaptorColor.size());
  for (size_t r = 0; r < peers.size(); ++r) {
    memset(&peers[r], 0, sizeof(PeerInfo));
    peers[r].rank = (int)r;
    snprintf(peers[r].adaptor, sizeof(peers[r].adaptor), "%s", adaptorColor[r].first);
    peers[r].domainColor = adaptorColor[r].second;
  }
  return peers;
}

TEST(DomainSplit, ParsesOneColorPerRank) {
  int color = -1;
  EXPECT_EQ(parseDomainSplit("", 2, 4, &color), mixcclSuccess);
  EXPECT_EQ(color, 0);
  EXPECT_EQ(parseDomainSplit("0,1,1,1", 0, 4, &color), mixcclSuccess);
  EXPECT_EQ(color, 0);
  EXPECT_EQ(parseDomainSplit("0,1,1,7", 3, 4, &color), mixcclSuccess);
  EXPECT_EQ(color, 7);
}

TEST(DomainSplit, RefusesBadSpecsWithAReason) {
  int color;
  EXPECT_EQ(parseDomainSplit("0,1,1", 0, 4, &color), mixcclInvalidArgument);  // too few
  EXPECT_EQ(parseDomainSplit("0,1,1,1,0", 0, 4, &color), mixcclInvalidArgument);  // too many
  EXPECT_EQ(parseDomainSplit("0,x,1,1", 0, 4, &color), mixcclInvalidArgument);
  EXPECT_EQ(parseDomainSplit("0,-1,1,1", 0, 4, &color), mixcclInvalidArgument);
  EXPECT_EQ(parseDomainSplit("0,,1,1", 0, 4, &color), mixcclInvalidArgument);
  EXPECT_EQ(parseDomainSplit("0,1,1,1,", 0, 4, &color), mixcclInvalidArgument);
}

TEST(DomainMapTest, GroupsByAdaptorAndColorInRankOrder) {
  DomainMap m = buildDomainMap(peersWith({{"host", 0}, {"gloo", 0}, {"host", 0}, {"gloo", 0},
                                           {"host", 1}, {"mpi", 0}}));
  ASSERT_EQ(m.domains.size(), 4u);
  EXPECT_EQ(m.domains[0].adaptor, "host");
  EXPECT_EQ(m.domains[0].ranks, (std::vector<int>{0, 2}));
  EXPECT_EQ(m.domains[1].adaptor, "gloo");
  EXPECT_EQ(m.domains[1].ranks, (std::vector<int>{1, 3}));
  EXPECT_EQ(m.domains[2].ranks, (std::vector<int>{4}));  // host, other color
  EXPECT_EQ(m.domains[3].adaptor, "mpi");
  EXPECT_EQ(m.domainOf, (std::vector<int>{0, 1, 0, 1, 2, 3}));
  EXPECT_EQ(m.indexInDomain, (std::vector<int>{0, 0, 1, 1, 0, 0}));
  EXPECT_FALSE(m.single());
  EXPECT_EQ(describeDomains(m), "4 domains: host {0,2} + gloo {1,3} + host {4} + mpi {5}");
}

TEST(DomainMapTest, HomogeneousJobIsOneDomain) {
  DomainMap m = buildDomainMap(peersWith({{"host", 0}, {"host", 0}, {"host", 0}}));
  EXPECT_TRUE(m.single());
  EXPECT_EQ(m.domains[0].ranks.size(), 3u);
}

// Every element is owned by exactly one rank of each domain, whatever the sizes.
TEST(OwnedRanges, PartitionEveryPieceExactly) {
  for (size_t len : {0u, 1u, 2u, 5u, 7u, 12u, 1009u}) {
    for (int n = 1; n <= 7; ++n) {
      std::vector<int> owners(len, 0);
      for (int j = 0; j < n; ++j) {
        OwnedRange r = ownedRange(len, n, j);
        EXPECT_LE(r.begin, r.end);
        EXPECT_LE(r.size(), shardElems(len, n));
        for (size_t i = r.begin; i < r.end; ++i) owners[i]++;
      }
      for (size_t i = 0; i < len; ++i) EXPECT_EQ(owners[i], 1) << "len " << len << " n " << n;
    }
  }
}

}  // namespace
}  // namespace mixccl
