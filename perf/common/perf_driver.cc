// perfMain, the shared driver of the *_perf tools: parses the command line, refuses a sweep the
// host cannot hold, becomes a rank, checks the memory mode against the adaptor, allocates the
// buffers, then runs the sweep and the report (perf_runner.h) and tears down.
#include "perf_driver.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "mixccl_adaptor.h"
#include "mixccl_launch.h"
#include "perf_args.h"
#include "perf_memory_budget.h"
#include "perf_output.h"
#include "perf_runner.h"
#include "perf_types.h"

namespace mixperf {

namespace {

// Whether this process should speak for the job about a mistake every rank makes alike (a bad
// flag, a sweep too large): rank 0, or the first rank of each host for what depends on the host.
// Under a launcher the others stay silent, so the usage is printed once, not once per rank.
bool speaksForJob(bool perHost) {
  mixcclLaunchInfo info;
  if (mixcclLaunchDetect(&info) != 0) return true;
  return perHost ? info.localRank == 0 : info.rank == 0;
}

// The exit of a rank that stays silent: a launcher ends the whole job as soon as one rank fails
// (mixcclrun and mpirun send SIGTERM), so the silent ones give the speaker time to print first.
int quietExit(int status) {
  std::this_thread::sleep_for(std::chrono::seconds(2));
  return status;
}

// The largest buffer the sweep needs (one allocation for all sizes and types: in-place runs use
// recvBuf for both sides), for nranks ranks.
size_t largestBuffer(const CollDesc& coll, const PerfArgs& a, const std::vector<size_t>& sizes,
                     int nranks) {
  size_t maxBytes = 0;
  for (mixcclDataType_t t : a.types) {
    const size_t es = typeInfo(t).size;
    for (size_t s : sizes) {
      Counts c;
      coll.getCounts(s / es, es, nranks, &c);
      maxBytes = std::max(maxBytes, std::max(c.send, c.recv) * es);
    }
  }
  return maxBytes + 64;
}

}  // namespace

int perfMain(int argc, char** argv, const CollDesc& coll) {
  Runner R(coll);
  const char* slash = std::strrchr(argv[0], '/');
  R.program = slash ? slash + 1 : argv[0];
  std::string err;
  switch (parseArgs(argc, argv, &R.args, &err)) {
    case ParseResult::kHelp:
      if (speaksForJob(false)) std::printf("%s", usage(R.program.c_str()).c_str());
      return 0;
    case ParseResult::kError:
      if (!speaksForJob(false)) return quietExit(2);
      std::fprintf(stderr, "%s: %s\n%s", R.program.c_str(), err.c_str(),
                   usage(R.program.c_str()).c_str());
      return 2;
    case ParseResult::kOk:
      break;
  }
  PerfArgs& a = R.args;
  const std::string startTime = wallClock();
  const std::vector<size_t> sizes = sizeSweep(a);

  // Refuse a sweep the host cannot hold before any rank allocates (or joins the job): three
  // host buffers per rank (send, receive, expected; on device memory the host mirrors).
  mixcclLaunchInfo detected;
  if (mixcclLaunchDetect(&detected) == 0) {
    const size_t need = largestBuffer(coll, a, sizes, detected.nranks);
    const int onHost = detected.localSize > 0 ? detected.localSize : 1;
    std::string shortfall = memoryShortfall(a.maxBytes, need, 3, onHost, availableHostMemory());
    if (!shortfall.empty()) {
      if (!speaksForJob(true)) return quietExit(2);
      std::fprintf(stderr, "%s: %s\n", R.program.c_str(), shortfall.c_str());
      return 2;
    }
  }

  mixcclConfig_t config = MIXCCL_CONFIG_INITIALIZER;
  if (a.timeoutSec > 0) config.timeout = a.timeoutSec;
  // -M host: host memory needs a host-memory adaptor; without MIXCCL_ADAPTOR that is "host"
  // (detection could pick nccl). A named device adaptor is refused below, as is -M device on a
  // rank whose adaptor (named or detected) takes host memory.
  const bool forceHost = a.memory == PerfArgs::Memory::kHost;
  const char* namedAdaptor = std::getenv("MIXCCL_ADAPTOR");
  const bool adaptorNamed = namedAdaptor != nullptr && *namedAdaptor != '\0';
  if (forceHost && !adaptorNamed) config.adaptor = "host";
  mixcclLaunchInfo info;
  mixcclResult_t res = mixcclLaunchInitComm(&R.comm, &info, &config);
  if (res != mixcclSuccess) {
    std::fprintf(stderr, "%s: %s\n", R.program.c_str(), mixcclLaunchLastError());
    return 1;
  }
  R.check(mixcclCommUserRank(R.comm, &R.rank), "mixcclCommUserRank");
  R.check(mixcclCommCount(R.comm, &R.nranks), "mixcclCommCount");
  const mixcclAdaptor_v2_t* adaptor = nullptr;
  R.check(mixcclCommGetAdaptor(R.comm, &adaptor), "mixcclCommGetAdaptor");
  if (forceHost && adaptor->memoryKind == MIXCCL_ADAPTOR_DEVICE_MEMORY) {
    R.failMemory(std::string("-M host, but MIXCCL_ADAPTOR=") + adaptor->name +
                 " takes device memory only; unset MIXCCL_ADAPTOR (the rank then uses the host "
                 "adaptor) or name a host-memory adaptor");
  }
  if (a.memory == PerfArgs::Memory::kDevice &&
      adaptor->memoryKind != MIXCCL_ADAPTOR_DEVICE_MEMORY) {
    R.failMemory(std::string("-M device, but this rank's adaptor, ") + adaptor->name +
                 (adaptorNamed ? " (MIXCCL_ADAPTOR)" : " (detected)") +
                 ", takes host memory; set MIXCCL_ADAPTOR to a device adaptor (nccl) or use -M "
                 "auto");
  }
  R.checkMemory(R.mem.init(adaptor));
  R.startWatchdog();

  std::vector<int> roots;
  if (coll.rooted) {
    if (a.allRoots) {
      for (int r = 0; r < R.nranks; ++r) roots.push_back(r);
    } else {
      if (a.root >= R.nranks) {
        if (R.rank == 0)
          std::fprintf(stderr, "%s: root %d is not a rank of this %d-rank job\n",
                       R.program.c_str(), a.root, R.nranks);
        mixcclCommDestroy(R.comm);
        return 2;
      }
      roots.push_back(a.root);
    }
  } else {
    roots.push_back(-1);
  }
  std::vector<mixcclRedOp_t> ops = coll.reduction ? a.ops : std::vector<mixcclRedOp_t>{mixcclSum};

  R.bufBytes = largestBuffer(coll, a, sizes, R.nranks);
  R.checkMemory(R.mem.alloc(R.bufBytes, &R.sendBuf));
  R.checkMemory(R.mem.alloc(R.bufBytes, &R.recvBuf));
  R.scratchBytes = 512 * (static_cast<size_t>(R.nranks) + 1);
  R.checkMemory(R.mem.alloc(R.scratchBytes, &R.scratch));
  // Host mirrors: separate buffers on device memory, the buffers themselves on host memory.
  std::vector<char*> hostOnly;
  for (char** b : {&R.hostSend, &R.hostRecv, &R.expBuf, &R.hostScratch}) {
    const bool mirrorsItself = !R.mem.device() && b != &R.expBuf;
    if (mirrorsItself) continue;
    const size_t bytes = b == &R.hostScratch ? R.scratchBytes : R.bufBytes;
    void* p = nullptr;
    if (posix_memalign(&p, 4096, bytes) != 0) R.failMemory("cannot allocate host memory");
    std::memset(p, 0, bytes);
    *b = static_cast<char*>(p);
    hostOnly.push_back(*b);
  }
  if (!R.mem.device()) {
    R.hostSend = R.sendBuf;
    R.hostRecv = R.recvBuf;
    R.hostScratch = R.scratch;
  }

  std::vector<DeviceRecord> devices;
  R.printHeader(info, &devices);
  if (R.rank == 0) {
    std::printf("%s", tableHeader().c_str());
    std::fflush(stdout);
  }

  R.sweep(sizes, ops, roots);
  R.conclude(sizes, devices, startTime, argc, argv);
  // Every rank exits only after rank 0 has written everything: with errors all ranks exit
  // non-zero, and a launcher that ends the job at the first failing rank must not cut rank 0's
  // footer off.
  R.barrier();
  R.done.store(true);
  if (R.watchdog.joinable()) R.watchdog.join();
  R.check(mixcclCommDestroy(R.comm), "mixcclCommDestroy");
  R.comm = nullptr;
  for (char* b : {R.sendBuf, R.recvBuf, R.scratch}) R.mem.release(b);
  for (char* b : hostOnly) std::free(b);
  return R.outOfBounds ? 1 : 0;
}

}  // namespace mixperf
