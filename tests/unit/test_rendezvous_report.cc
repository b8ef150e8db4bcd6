// What the ranks that arrived learn about the ones that never did (bootstrap/rendezvous_report).
#include <gtest/gtest.h>

#include "bootstrap/rendezvous_report.h"
#include "bootstrap/socket_address.h"

namespace mixccl {
namespace {

RendezvousTable tableWith(int nranks, std::vector<int> arrived) {
  RendezvousTable t;
  SocketAddress a;
  EXPECT_EQ(parseHostPort("127.0.0.1:4000", &a), mixcclSuccess);
  for (int r : arrived) {
    RankHello h{};
    h.magic = kRankHelloMagic;
    h.nranks = nranks;
    h.rank = r;
    h.nroots = 1;
    h.exchangeAddr = toWire(a);
    snprintf(h.info.hostname, sizeof(h.info.hostname), "node");
    snprintf(h.info.adaptor, sizeof(h.info.adaptor), "host");
    h.info.rank = r;
    h.info.listenAddr = toWire(a);
    std::string why;
    EXPECT_EQ(t.offer(h, &why), RendezvousTable::Verdict::Admitted) << why;
  }
  return t;
}

TEST(RendezvousReport, RankListsCollapseRuns) {
  EXPECT_EQ(rankList({3}), "3");
  EXPECT_EQ(rankList({4, 5}), "4-5");
  EXPECT_EQ(rankList({1, 3, 5, 6, 7}), "1, 3, 5-7");
  std::vector<int> odd;
  for (int r = 1; r < 200; r += 2) odd.push_back(r);
  EXPECT_EQ(rankList(odd, 20), "1, 3, 5, 7, 9, 11, ... (100 in all)");
}

TEST(RendezvousReport, NamesTheMissingRanks) {
  EXPECT_EQ(missingRanksReport(tableWith(6, {0, 1, 2, 3}), 300),
            "ranks 4-5 of 6 never arrived within 300 s (MIXCCL_TIMEOUT_S; ranks 0-3 did)");
  EXPECT_EQ(missingRanksReport(tableWith(2, {0}), 3),
            "rank 1 of 2 never arrived within 3 s (MIXCCL_TIMEOUT_S; rank 0 did)");
}

TEST(RendezvousReport, CausesNameMpiInitUnderMpirun) {
  EXPECT_EQ(missingRanksCauses(false),
            "a rank that never arrives did not start, failed before mixcclCommInitRank or is "
            "blocked before it");
  EXPECT_EQ(missingRanksCauses(true),
            "a rank that never arrives did not start, failed before mixcclCommInitRank or is "
            "blocked before it; under mpirun the usual cause is the mpi adaptor: its ranks wait in "
            "MPI_Init for every process of the job, so every process must call MPI_Init, also "
            "those using another adaptor (docs/adaptors.md)");
}

// The root's reply carries the report in 248 bytes: even 1000 scattered ranks fit.
TEST(RendezvousReport, FitsTheRootReply) {
  std::vector<int> even;
  for (int r = 0; r < 1000; r += 2) even.push_back(r);
  std::string m = "rendezvous root [fe80::1234:5678:9abc:def0]:65535: " +
                  missingRanksReport(tableWith(1000, even), 16777216);
  EXPECT_LT(m.size(), sizeof(RootReply::message)) << m;
}

}  // namespace
}  // namespace mixccl
