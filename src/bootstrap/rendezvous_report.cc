#include "bootstrap/rendezvous_report.h"

#include <algorithm>
#include <cstdlib>

namespace mixccl {

std::string rankList(const std::vector<int>& ranks, size_t maxChars) {
  std::string s;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    std::string run = std::to_string(ranks[i]) + (j > i ? "-" + std::to_string(ranks[j]) : "");
    if (!s.empty() && s.size() + 2 + run.size() > maxChars)
      return s + ", ... (" + std::to_string(ranks.size()) + " in all)";
    s += (s.empty() ? "" : ", ") + run;
    i = j + 1;
  }
  return s;
}

std::string missingRanksReport(const RendezvousTable& table, int timeoutS, size_t room) {
  std::vector<int> missing, present;
  std::vector<int> expected = table.expectedRanks();
  std::sort(expected.begin(), expected.end());
  for (int r : expected) (table.has(r) ? present : missing).push_back(r);
  // The missing ranks matter most: they get the room, the others a short list.
  auto ranks = [](const std::vector<int>& v, size_t room) {
    return std::string(v.size() == 1 ? "rank " : "ranks ") + rankList(v, room);
  };
  return ranks(missing, room * 2 / 3) + " of " + std::to_string(table.nranks()) +
         " never arrived within " + std::to_string(timeoutS) + " s (MIXCCL_TIMEOUT_S; " +
         (present.empty() ? std::string("none") : ranks(present, room / 3)) + " did)";
}

std::string missingRanksCauses(bool underMpirun) {
  std::string m = "a rank that never arrives did not start, failed before mixcclCommInitRank or "
                  "is blocked before it";
  if (underMpirun)
    m += "; under mpirun the usual cause is the mpi adaptor: its ranks wait in MPI_Init for "
         "every process of the job, so every process must call MPI_Init, also those using "
         "another adaptor (docs/adaptors.md)";
  return m;
}

bool startedByMpirun() {
  const char* size = std::getenv("OMPI_COMM_WORLD_SIZE");  // set by Open MPI in every process
  return size != nullptr && *size != '\0';
}

}  // namespace mixccl
