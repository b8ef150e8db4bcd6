#include "mixccl/train/lost_ranks.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <regex>
#include <set>
#include <thread>

namespace mixccl::train {

namespace {

std::string ThisHostName() {
  char host[64] = {0};
  gethostname(host, sizeof(host) - 1);
  return host;
}

}  // namespace

std::uint32_t HostNameHash(const std::string& name) {
  std::uint32_t h = 2166136261u;
  for (char c : name.substr(0, 63)) {
    h ^= static_cast<unsigned char>(c);
    h *= 16777619u;
  }
  return h;
}

std::vector<JobProcess> GatherJobProcesses(Collectives* comm, int rank, int num_ranks) {
  // Both fields are below 2^32, exact in a double.
  std::vector<double> rows(static_cast<size_t>(num_ranks) * 2, 0.0);
  rows[rank * 2] = HostNameHash(ThisHostName());
  rows[rank * 2 + 1] = static_cast<double>(getpid());
  comm->SumOverAll(rows.data(), rows.size());
  std::vector<JobProcess> out(num_ranks);
  for (int r = 0; r < num_ranks; ++r) {
    out[r] = {static_cast<std::uint32_t>(rows[r * 2]), static_cast<long>(rows[r * 2 + 1])};
  }
  return out;
}

std::vector<NamedProcess> FailedProcessesInMessage(const std::string& message) {
  // describePeer's "rank R (HOST pid P)" followed by " failed".
  static const std::regex named(R"(rank \d+ \((\S+) pid (\d+)\) failed)");
  std::vector<NamedProcess> out;
  for (auto it = std::sregex_iterator(message.begin(), message.end(), named);
       it != std::sregex_iterator(); ++it) {
    out.push_back({(*it)[1].str(), std::stol((*it)[2].str())});
  }
  return out;
}

bool ProcessEnded(long pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(stat, text)) return true;
  // "pid (comm) S ...": the state follows the last ')' (comm may hold anything).
  const size_t close = text.rfind(')');
  if (close == std::string::npos || close + 2 >= text.size()) return true;
  const char state = text[close + 2];
  return state == 'Z' || state == 'X';
}

std::vector<int> LostRanks(const std::string& message, const std::vector<JobProcess>& job,
                           int my_rank, double grace_s) {
  const std::uint32_t here = HostNameHash(ThisHostName());
  std::set<int> named_here, lost;
  for (const NamedProcess& p : FailedProcessesInMessage(message)) {
    for (int r = 0; r < static_cast<int>(job.size()); ++r) {
      if (r == my_rank || job[r].pid != p.pid || job[r].host != HostNameHash(p.host)) continue;
      if (job[r].host == here) {
        named_here.insert(r);
      } else {
        lost.insert(r);  // another host's process cannot be checked: mixccl's word for it
      }
    }
  }
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(grace_s);
  while (true) {
    for (int r = 0; r < static_cast<int>(job.size()); ++r) {
      if (r != my_rank && job[r].host == here && ProcessEnded(job[r].pid)) lost.insert(r);
    }
    const bool all_named_ended = std::all_of(named_here.begin(), named_here.end(),
                                             [&](int r) { return lost.count(r) > 0; });
    // A named process of this host that still runs after the grace gave up a communicator in
    // its own recovery: it survives.
    if ((all_named_ended && !lost.empty()) || std::chrono::steady_clock::now() > deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return std::vector<int>(lost.begin(), lost.end());
}

}  // namespace mixccl::train
