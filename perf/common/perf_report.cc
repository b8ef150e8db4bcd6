// The report of a *_perf tool around its table (perf_runner.h): the header with one line per
// rank (gathered at rank 0), and after the sweep the device copy roof, the footer and the JSON
// document.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "perf_runner.h"

namespace mixperf {

namespace {

std::string cpuModel() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("model name", 0) == 0) {
      size_t c = line.find(':');
      if (c != std::string::npos) {
        std::string m = line.substr(c + 1);
        m.erase(0, m.find_first_not_of(' '));
        return m;
      }
    }
  }
  return "CPU";
}

}  // namespace

void Runner::printHeader(const mixcclLaunchInfo& info, std::vector<DeviceRecord>* devices) {
  // Gather one line per rank at rank 0 (AllGather of fixed-size records).
  constexpr size_t kRec = 512;
  std::vector<char> mine(kRec, 0);
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  int device = 0;
  if (mixcclCommDevice(comm, &device) != mixcclSuccess) device = -1;
  std::snprintf(mine.data(), kRec, "%d|%d|%s|%d|%s %s (%s)", rank, static_cast<int>(getpid()),
                host, device, mem.describe().c_str(), cpuModel().c_str(), info.launcher);
  std::memcpy(hostScratch, mine.data(), kRec);
  scratchCollective(kRec, kRec, kRec * static_cast<size_t>(nranks), "header AllGather",
                    [](const void* in, void* out, Runner& R) {
                      return mixcclAllGather(in, out, 512, mixcclInt8, R.comm, R.mem.stream());
                    });
  const char* all = hostScratch + kRec;
  if (rank != 0) return;
  int libVersion = 0;
  mixcclGetVersion(&libVersion);
  std::printf("# mixccl-tests version %d.%d.%d mixccl-headers=%d mixccl-library=%d\n",
              MIXCCL_MAJOR, MIXCCL_MINOR, MIXCCL_PATCH, MIXCCL_VERSION_CODE, libVersion);
  std::printf("# Collective test starting: %s\n", program.c_str());
  std::printf("# nThread 1 nGpus 1 nRanks %d minBytes %zu maxBytes %zu step: %zu(%s) warmup "
              "iters: %d iters: %d agg iters: %d validation: %d graph: 0\n",
              nranks, args.minBytes, args.maxBytes,
              args.stepFactor > 1 ? args.stepFactor : args.stepBytes,
              args.stepFactor > 1 ? "factor" : "bytes", args.warmupIters, args.iters,
              args.aggIters, args.check);
  std::printf("#\n# Using devices\n");
  for (int r = 0; r < nranks; ++r) {
    std::string rec(all + kRec * static_cast<size_t>(r));
    DeviceRecord d;
    std::vector<std::string> f;
    size_t s = 0;
    for (int k = 0; k < 4; ++k) {
      size_t bar = rec.find('|', s);
      f.push_back(rec.substr(s, bar == std::string::npos ? std::string::npos : bar - s));
      s = bar == std::string::npos ? rec.size() : bar + 1;
    }
    d.rank = std::atoi(f[0].c_str());
    d.pid = std::atoi(f[1].c_str());
    d.hostname = f[2];
    d.device = std::atoi(f[3].c_str());
    d.info = rec.substr(std::min(s, rec.size()));
    std::printf("#  Rank %2d Group %2d Pid %6d on %10s device %2d %s\n", d.rank, 0, d.pid,
                d.hostname.c_str(), d.device, d.info.c_str());
    devices->push_back(d);
  }
  std::fflush(stdout);
}

void Runner::conclude(const std::vector<size_t>& sizes, const std::vector<DeviceRecord>& devices,
                      const std::string& startTime, int argc, char** argv) {
  // The device copy roof, measured now by every device rank at once (no collective runs any
  // more) at the sweep's largest size (at most 1 GiB) between the sweep's own device buffers;
  // host-memory ranks contribute nothing.
  const size_t largestSize = sizes.empty() ? 1 : *std::max_element(sizes.begin(), sizes.end());
  const size_t roofBytes = std::min({std::max<size_t>(largestSize, 1), size_t(1) << 30, bufBytes});
  const int roofReps = 5;
  CopyRoof roof;
  if (mem.device())
    checkMemory(measureCopyRoof(mem, sendBuf, recvBuf, roofBytes, roofReps, &roof));
  const int64_t deviceRanks = sumAcrossRanks(mem.device() ? 1 : 0);
  if (deviceRanks > 0) maxAcrossRanks(&roof);

  const double avgBw = bwCount ? bwSum / bwCount : 0.0;
  if (rank == 0) {
    std::printf("%s", footer(outOfBounds, avgBw).c_str());
    if (deviceRanks > 0)
      std::printf("%s",
                  copyRoofLine(roof, roofBytes, roofReps, static_cast<int>(deviceRanks)).c_str());
    std::printf("# Collective test concluded: %s\n", program.c_str());
    std::fflush(stdout);
    if (!args.jsonPath.empty()) {
      std::vector<std::string> argList(argv, argv + argc);
      int libVersion = 0;
      mixcclGetVersion(&libVersion);
      std::string doc = jsonDocument(program, argList, startTime, wallClock(), configJson(),
                                     devices, results, outOfBounds, avgBw, libVersion);
      std::ofstream f(args.jsonPath);
      f << doc;
      if (!f) {
        std::fprintf(stderr, "%s: cannot write %s\n", program.c_str(), args.jsonPath.c_str());
      } else {
        std::printf("# Wrote JSON output to %s\n", args.jsonPath.c_str());
      }
    }
  }
}

std::string Runner::configJson() {
  char buf[512];
  std::snprintf(buf, sizeof(buf),
                "{\"nranks\": %d, \"minimum_bytes\": %zu, \"maximum_bytes\": %zu, \"%s\": %zu, "
                "\"warmup_iters\": %d, \"iterations\": %d, \"aggregated_iterations\": %d, "
                "\"validation\": %d, \"average\": %d, \"run_cycles\": %d, \"timeout\": %d}",
                nranks, args.minBytes, args.maxBytes,
                args.stepFactor > 1 ? "step_factor" : "step_bytes",
                args.stepFactor > 1 ? args.stepFactor : args.stepBytes, args.warmupIters,
                args.iters, args.aggIters, args.check, args.average, args.cycles, args.timeoutSec);
  return buf;
}

}  // namespace mixperf
