// mixccl-topo: prints this host's topology, and under a launcher the topology of the whole job
// (every rank's host, NUMA node, device and NIC), as text or JSON. docs/topology.md.
#include <net/if.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "mixccl.h"
#include "bootstrap/interface_match.h"
#include "mixccl_launch.h"
#include "topology/topology.h"

namespace {

using namespace mixccl;

struct Options {
  bool json = false;
  bool all = false;
  bool localOnly = false;
  bool bind = false;
  bool help = false;
  std::string output;
  std::string devicePci;
  std::string adaptor;
};

void usage(FILE* f) {
  fprintf(f,
          "usage: mixccl-topo [--json] [--local] [--all] [--output FILE] [--device-pci BUSID]\n"
          "                   [--adaptor NAME] [--bind]\n"
          "  Prints this host's topology. Started by a launcher (mixcclrun, mpirun, srun,\n"
          "  torchrun) it also joins the job and rank 0 prints every rank's placement.\n"
          "  --json            JSON (schema mixccl-topology/1) instead of text\n"
          "  --local           only this host, even under a launcher\n"
          "  --all             under a launcher, every rank prints (not only rank 0)\n"
          "  --output FILE     write to FILE instead of stdout; %%r rank, %%h host, %%p pid\n"
          "                    (same rules as MIXCCL_TOPO_DUMP_FILE)\n"
          "  --device-pci ID   PCI bus id of this rank's device, for the NIC choice\n"
          "  --adaptor NAME    adaptor shown for this rank (default MIXCCL_ADAPTOR or host)\n"
          "  --bind            bind the calling thread near the chosen NIC (as the proxy is)\n");
}

// Returns "" or what is wrong with the command line.
std::string parse(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    std::string missing = a + " needs a value";
    auto value = [&](std::string* dst) {
      if (i + 1 >= argc) return false;
      *dst = argv[++i];
      return true;
    };
    if (a == "--json") o->json = true;
    else if (a == "--all") o->all = true;
    else if (a == "--local") o->localOnly = true;
    else if (a == "--bind") o->bind = true;
    else if (a == "--output" || a == "-o") { if (!value(&o->output)) return missing; }
    else if (a == "--device-pci") { if (!value(&o->devicePci)) return missing; }
    else if (a == "--adaptor") { if (!value(&o->adaptor)) return missing; }
    else if (a == "--help" || a == "-h") o->help = true;
    else return "unknown argument " + a;
  }
  if (o->adaptor.empty()) {
    const char* e = getenv("MIXCCL_ADAPTOR");
    o->adaptor = e && *e ? e : "host";
  }
  return "";
}

// Under a launcher every rank gets the same command line: only rank 0 explains a mistake (and
// prints the help), so the usage does not appear once per rank.
bool speaksForJob() {
  mixcclLaunchInfo info;
  return mixcclLaunchDetect(&info) != 0 || info.rank == 0;
}

// The interfaces the socket layer may use, in its order: MIXCCL_SOCKET_IFNAME in NCCL's syntax
// (prefixes, "^" excludes, "=" exact names; unset: anything but lo and docker), up and addressed.
// The matching rule is the library's own (bootstrap/interface_match.cc, compiled into this
// tool too); the listing mirrors the socket layer's because the tool only sees the public API.
void socketCandidates(const LocalTopology& t, std::vector<std::string>* candidates,
                      std::string* fallback) {
  const char* env = getenv("MIXCCL_SOCKET_IFNAME");
  std::string spec = env ? env : "";
  // Like the socket layer, IPv6 link-local addresses do not count.
  auto usable = [](const TopoNic& n) {
    if (!n.up) return false;
    for (const std::string& a : n.addresses)
      if (a.compare(0, 4, "fe80") != 0) return true;
    return false;
  };
  for (const TopoNic& n : t.nics)
    if (usable(n) && interfaceMatches(spec, n.name)) candidates->push_back(n.name);
  if (candidates->empty() && spec.empty())
    for (const TopoNic& n : t.nics)
      if (usable(n) && n.name.compare(0, 2, "lo") == 0) candidates->push_back(n.name);
  *fallback = candidates->empty() ? "" : (*candidates)[0];
}

int emit(const Options& o, const TopologyView& view, const std::vector<RankTopology>* ranks) {
  std::string text = o.json ? topologyToJson(view) : topologyToText(view);
  if (o.output.empty()) {
    fwrite(text.data(), 1, text.size(), stdout);
    fflush(stdout);
    return 0;
  }
  std::string path = o.output;
  // In a job the name follows MIXCCL_TOPO_DUMP_FILE's rules: without %r, %p or %h only rank 0
  // writes, with %h one rank per host.
  if (ranks && view.rank >= 0 && !topologyDumpPath(o.output, view.rank, *ranks, &path)) return 0;
  if (o.json) {
    if (writeTopologyDump(path, view) != mixcclSuccess) {
      fprintf(stderr, "mixccl-topo: %s\n", topologyLastError().c_str());
      return 1;
    }
    return 0;
  }
  FILE* f = fopen(path.c_str(), "w");
  if (!f || fwrite(text.data(), 1, text.size(), f) != text.size() || fclose(f) != 0) {
    fprintf(stderr, "mixccl-topo: cannot write %s: %s\n", path.c_str(), strerror(errno));
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  std::string bad = parse(argc, argv, &o);
  if (!bad.empty() || o.help) {
    if (!speaksForJob()) {
      // A launcher ends the job at the first failing rank: let rank 0 print before that.
      if (!bad.empty()) sleep(2);
      return bad.empty() ? 0 : 2;
    }
    if (!bad.empty()) fprintf(stderr, "mixccl-topo: %s\n", bad.c_str());
    usage(bad.empty() ? stdout : stderr);
    return bad.empty() ? 0 : 2;
  }
  LocalTopology local;
  if (discoverLocalTopology(&local) != mixcclSuccess) {
    fprintf(stderr, "mixccl-topo: discovery failed: %s\n", topologyLastError().c_str());
    return 1;
  }
  std::vector<std::string> candidates;
  std::string fallback;
  socketCandidates(local, &candidates, &fallback);
  NicChoice nic;
  if (!fallback.empty() &&
      chooseNic(local, o.devicePci, candidates, fallback, &nic) != mixcclSuccess) {
    fprintf(stderr, "mixccl-topo: NIC choice failed: %s\n", topologyLastError().c_str());
    return 1;
  }
  if (o.bind) {
    BindPlan plan;
    if (bindThreadNear(local, nic.name.empty() ? o.devicePci : nic.name, &plan) != mixcclSuccess) {
      fprintf(stderr, "mixccl-topo: %s\n", topologyLastError().c_str());
      return 1;
    }
    fprintf(stderr, "mixccl-topo: %s\n", plan.note.c_str());
    local.threadNumaNode = currentNumaNode(local);
  }

  mixcclLaunchInfo info;
  bool launched = !o.localOnly && mixcclLaunchDetect(&info) == 0 &&
                  strcmp(info.launcher, "none") != 0;
  if (!launched) {
    TopologyView view;
    view.local = &local;
    int rc = emit(o, view, nullptr);
    if (!o.json && o.output.empty() && !nic.name.empty())
      printf("NIC choice: %s (%s)\n", nic.name.c_str(), nic.reason.c_str());
    return rc;
  }

  mixcclComm_t comm = nullptr;
  if (mixcclLaunchInitComm(&comm, &info, nullptr) != mixcclSuccess) {
    fprintf(stderr, "mixccl-topo: joining the job failed: %s\n", mixcclLaunchLastError());
    return 1;
  }
  int rank = 0, nranks = 0;
  mixcclCommUserRank(comm, &rank);
  mixcclCommCount(comm, &nranks);
  RankTopology mine;
  uint8_t wire[kRankTopologyWireBytes];
  if (fillRankTopology(local, rank, o.adaptor, -1, o.devicePci, nic, &mine) != mixcclSuccess ||
      encodeRankTopology(mine, wire, sizeof(wire)) != mixcclSuccess) {
    fprintf(stderr, "mixccl-topo: rank %d: %s\n", rank, topologyLastError().c_str());
    mixcclCommAbort(comm);
    return 1;
  }
  std::vector<uint8_t> all((size_t)nranks * kRankTopologyWireBytes);
  mixcclResult_t r =
      mixcclAllGather(wire, all.data(), kRankTopologyWireBytes, mixcclUint8, comm, nullptr);
  if (r != mixcclSuccess) {
    fprintf(stderr, "mixccl-topo: rank %d: AllGather failed: %s\n", rank,
            mixcclGetLastError(comm));
    mixcclCommAbort(comm);
    return 1;
  }
  std::vector<RankTopology> ranks((size_t)nranks);
  for (int i = 0; i < nranks; i++) {
    if (decodeRankTopology(&all[(size_t)i * kRankTopologyWireBytes], kRankTopologyWireBytes,
                           &ranks[i]) != mixcclSuccess ||
        ranks[i].rank != i) {
      fprintf(stderr, "mixccl-topo: rank %d: bad topology from rank %d: %s\n", rank, i,
                      topologyLastError().empty() ? "rank field mismatch"
                                                  : topologyLastError().c_str());
      mixcclCommAbort(comm);
      return 1;
    }
  }
  int rc = 0;
  if (rank == 0 || o.all) {
    TopologyView view;
    view.local = &local;
    view.ranks = &ranks;
    view.rank = rank;
    rc = emit(o, view, &ranks);
  }
  mixcclCommDestroy(comm);
  return rc;
}
