#include "perf_driver.h"

#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "mixccl_adaptor.h"
#include "mixccl_launch.h"
#include "perf_args.h"
#include "perf_copy_roof.h"
#include "perf_memory.h"
#include "perf_memory_budget.h"
#include "perf_output.h"
#include "perf_types.h"

namespace mixperf {

namespace {

double nowSec() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string wallClock() {
  char buf[64];
  std::time_t t = std::time(nullptr);
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", std::localtime(&t));
  return buf;
}

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

// Everything the run needs, shared with the watchdog.
struct Runner {
  const CollDesc& coll;
  PerfArgs args;
  mixcclComm_t comm = nullptr;
  int rank = 0, nranks = 1;
  std::string program;
  std::atomic<double> opStart{0.0};  // 0 when no operation is in flight
  std::atomic<bool> done{false};
  std::thread watchdog;
  PerfMemory mem;
  // Buffers the collectives take (device memory on device adaptors), and their host mirrors where
  // data is filled and checked (the buffers themselves on host memory).
  char* sendBuf = nullptr;
  char* recvBuf = nullptr;
  char* hostSend = nullptr;
  char* hostRecv = nullptr;
  char* expBuf = nullptr;
  size_t bufBytes = 0;
  // Small exchanges of the driver itself (barrier, times, error counts, the header).
  char* scratch = nullptr;
  char* hostScratch = nullptr;
  size_t scratchBytes = 0;
  uint64_t checkCounter = 0;
  std::vector<ResultRecord> results;
  double bwSum = 0;
  int bwCount = 0;
  int outOfBounds = 0;

  explicit Runner(const CollDesc& c) : coll(c) {}

  [[noreturn]] void fail(const char* what, mixcclResult_t res) {
    std::fprintf(stderr, "%s: rank %d: %s failed: %s: %s\n", program.c_str(), rank, what,
                 mixcclGetErrorString(res), mixcclGetLastError(comm));
    std::fflush(stderr);
    if (comm != nullptr) mixcclCommAbort(comm);
    std::_Exit(1);
  }

  void check(mixcclResult_t res, const char* what) {
    if (res != mixcclSuccess) fail(what, res);
  }

  [[noreturn]] void failMemory(const std::string& why) {
    std::fprintf(stderr, "%s: rank %d: %s\n", program.c_str(), rank, why.c_str());
    std::fflush(stderr);
    if (comm != nullptr) mixcclCommAbort(comm);
    std::_Exit(1);
  }
  void checkMemory(const std::string& why) {
    if (!why.empty()) failMemory(why);
  }

  // The host mirror of a pointer into sendBuf or recvBuf.
  char* mirror(char* p) {
    if (p >= recvBuf && p < recvBuf + bufBytes) return hostRecv + (p - recvBuf);
    return hostSend + (p - sendBuf);
  }

  // Runs one small collective of the driver on host values in hostScratch: copied to scratch,
  // run on the rank's stream, copied back (no copies on host memory).
  void scratchCollective(size_t inBytes, size_t outOffset, size_t outBytes, const char* what,
                         mixcclResult_t (*op)(const void*, void*, Runner&)) {
    checkMemory(mem.upload(scratch, hostScratch, inBytes));
    arm();
    check(op(scratch, scratch + outOffset, *this), what);
    checkMemory(mem.synchronize());
    disarm();
    checkMemory(mem.download(hostScratch + outOffset, scratch + outOffset, outBytes));
  }

  void arm() {
    if (args.timeoutSec > 0) opStart.store(nowSec());
  }
  void disarm() {
    if (args.timeoutSec > 0) opStart.store(0.0);
  }

  void startWatchdog() {
    if (args.timeoutSec <= 0) return;
    watchdog = std::thread([this] {
      while (!done.load()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        double s = opStart.load();
        if (s > 0 && nowSec() - s > args.timeoutSec) {
          char host[256] = {0};
          gethostname(host, sizeof(host) - 1);
          std::fprintf(stderr, "%s: rank %d on %s: Test timeout (%d s): aborting\n",
                       program.c_str(), rank, host, args.timeoutSec);
          std::fflush(stderr);
          mixcclCommAbort(comm);
          std::this_thread::sleep_for(std::chrono::seconds(5));
          std::_Exit(3);
        }
      }
    });
  }

  void barrier() {
    int32_t one = 1;
    std::memcpy(hostScratch, &one, sizeof(one));
    scratchCollective(8, 8, 4, "barrier", [](const void* in, void* out, Runner& R) {
      return mixcclAllReduce(in, out, 1, mixcclInt32, mixcclSum, R.comm, R.mem.stream());
    });
  }

  double aggregateTime(double sec) {
    std::memcpy(hostScratch, &sec, sizeof(sec));
    using Op = mixcclResult_t (*)(const void*, void*, Runner&);
    Op op;
    switch (args.average) {
      case 0:
        op = [](const void* in, void* out, Runner& R) {
          return mixcclBroadcast(in, out, 1, mixcclFloat64, 0, R.comm, R.mem.stream());
        };
        break;
      case 2:
        op = [](const void* in, void* out, Runner& R) {
          return mixcclAllReduce(in, out, 1, mixcclFloat64, mixcclMin, R.comm, R.mem.stream());
        };
        break;
      case 3:
        op = [](const void* in, void* out, Runner& R) {
          return mixcclAllReduce(in, out, 1, mixcclFloat64, mixcclMax, R.comm, R.mem.stream());
        };
        break;
      default:
        op = [](const void* in, void* out, Runner& R) {
          return mixcclAllReduce(in, out, 1, mixcclFloat64, mixcclSum, R.comm, R.mem.stream());
        };
        break;
    }
    scratchCollective(8, 8, 8, "time aggregation", op);
    double out;
    std::memcpy(&out, hostScratch + 8, sizeof(out));
    return args.average == 1 ? out / nranks : out;
  }

  int64_t sumAcrossRanks(int64_t v) {
    std::memcpy(hostScratch, &v, sizeof(v));
    scratchCollective(8, 8, 8, "error count sum", [](const void* in, void* out, Runner& R) {
      return mixcclAllReduce(in, out, 1, mixcclInt64, mixcclSum, R.comm, R.mem.stream());
    });
    int64_t out;
    std::memcpy(&out, hostScratch + 8, sizeof(out));
    return out;
  }

  // Each bandwidth of the roof becomes the largest over ranks.
  void maxAcrossRanks(CopyRoof* roof) {
    double v[3] = {roof->h2dGBs, roof->d2hGBs, roof->d2dGBs};
    std::memcpy(hostScratch, v, sizeof(v));
    scratchCollective(sizeof(v), 64, sizeof(v), "copy roof maximum",
                      [](const void* in, void* out, Runner& R) {
                        return mixcclAllReduce(in, out, 3, mixcclFloat64, mixcclMax, R.comm,
                                               R.mem.stream());
                      });
    std::memcpy(v, hostScratch + 64, sizeof(v));
    roof->h2dGBs = v[0];
    roof->d2hGBs = v[1];
    roof->d2dGBs = v[2];
  }

  void pointers(const Counts& c, size_t es, bool inPlace, char** send, char** recv) {
    *send = inPlace ? recvBuf + c.sendInplaceOffset * static_cast<size_t>(rank) * es : sendBuf;
    *recv = recvBuf + (inPlace ? c.recvInplaceOffset * static_cast<size_t>(rank) * es : 0);
  }

  void runOnce(char* send, char* recv, const Counts& c, mixcclDataType_t t, mixcclRedOp_t op,
               int root) {
    arm();
    check(coll.run(send, recv, c.param, t, op, root, comm, rank, nranks, mem.stream()), coll.name);
    checkMemory(mem.synchronize());
    disarm();
  }

  // One timed + checked measurement of one placement. Returns (time us, algbw, busbw, wrong).
  void bench(const Counts& c, mixcclDataType_t t, mixcclRedOp_t op, int root, bool inPlace,
             ResultRecord* rec) {
    const size_t es = typeInfo(t).size;
    const int p = inPlace ? 1 : 0;
    char *send, *recv;
    pointers(c, es, inPlace, &send, &recv);
    // Benign values for the timed runs (0 is exact in every type, never a NaN or a denormal).
    std::memset(mirror(send), 0, c.send * es);
    checkMemory(mem.upload(send, mirror(send), c.send * es));

    runOnce(send, recv, c, t, op, root);  // sync, like nccl-tests
    barrier();
    double t0 = nowSec();
    for (int it = 0; it < args.iters; ++it) {
      if (args.aggIters > 1) check(mixcclGroupStart(), "mixcclGroupStart");
      for (int a = 0; a < args.aggIters; ++a) {
        arm();
        mixcclResult_t res =
            coll.run(send, recv, c.param, t, op, root, comm, rank, nranks, mem.stream());
        if (res != mixcclSuccess) fail(coll.name, res);
      }
      if (args.aggIters > 1) check(mixcclGroupEnd(), "mixcclGroupEnd");
    }
    checkMemory(mem.synchronize());  // stream-ordered work counts until it has finished
    double sec = (nowSec() - t0) / (static_cast<double>(args.iters) * args.aggIters);
    disarm();
    sec = aggregateTime(sec);

    const double bytes = static_cast<double>(c.param * es);
    double algBw = sec > 0 ? bytes * coll.algFactor(nranks) / 1.0e9 / sec : 0.0;
    double busBw = algBw * coll.busFactor(nranks);

    int64_t wrong = 0;
    const bool report = !(inPlace && !coll.inPlaceChecked);
    if (report) {
      for (int rep = 0; rep < args.check; ++rep) {
        DataPlan plan = makePlan(t, op, coll.reduction, nranks,
                                 0x6d69786363ULL * (++checkCounter) + 17);
        DataJob job{&plan, rank, nranks, root, c};
        const size_t recvSpan = std::max(c.send, c.recv) * es;
        poison(hostRecv, recvSpan);
        checkMemory(mem.upload(recvBuf, hostRecv, recvSpan));
        fillSend(job, mirror(send));
        checkMemory(mem.upload(send, mirror(send), c.send * es));
        bool checked = coll.fillExpected(job, expBuf);
        runOnce(send, recv, c, t, op, root);
        char* got = mirror(recv);
        checkMemory(mem.download(got, recv, c.recv * es));
        if (args.injectErrorRank == rank && checked && c.recv > 0) {
          got[(c.recv / 2) * es] ^= 0x01;
        }
        int64_t mine = checked ? static_cast<int64_t>(countMismatches(t, got, expBuf, c.recv)) : 0;
        if (mine != 0) {
          std::fprintf(stderr, "%s: rank %d: %lld wrong element(s) of %zu (%s %s %s root %d %s)\n",
                       program.c_str(), rank, static_cast<long long>(mine), c.recv, coll.name,
                       typeInfo(t).name, coll.reduction ? opInfo(op).name : "none", root,
                       inPlace ? "in-place" : "out-of-place");
        }
        wrong = sumAcrossRanks(mine);
        if (wrong != 0) break;
      }
    }
    rec->timeUs[p] = sec * 1e6;
    rec->algBw[p] = algBw;
    rec->busBw[p] = busBw;
    rec->wrong[p] = wrong;
    rec->reportErrors[p] = report;
    if (report && wrong != 0) ++outOfBounds;
    bwSum += busBw;
    ++bwCount;
  }

  void fillSend(const DataJob& job, char* send) { coll.fillSend(job, send); }

  void printHeader(const mixcclLaunchInfo& info, std::vector<DeviceRecord>* devices) {
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

  std::string configJson() {
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
};

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

  int cycle = 0;
  do {
    for (mixcclDataType_t t : a.types) {
      const size_t es = typeInfo(t).size;
      for (mixcclRedOp_t op : ops) {
        for (int root : roots) {
          const int callRoot = root < 0 ? 0 : root;
          // Warm-up over all sizes, out of place.
          for (size_t s : sizes) {
            Counts c;
            coll.getCounts(s / es, es, R.nranks, &c);
            char *send, *recv;
            R.pointers(c, es, false, &send, &recv);
            for (int w = 0; w < a.warmupIters; ++w) R.runOnce(send, recv, c, t, op, callRoot);
          }
          for (size_t s : sizes) {
            Counts c;
            coll.getCounts(s / es, es, R.nranks, &c);
            ResultRecord rec;
            rec.bytes = std::max(c.send, c.recv) * es;
            rec.count = c.param;
            rec.type = typeInfo(t).name;
            rec.op = coll.reduction ? opInfo(op).name : "none";
            rec.root = root;
            R.bench(c, t, op, callRoot, false, &rec);
            R.bench(c, t, op, callRoot, true, &rec);
            if (R.rank == 0) {
              std::string line = rowPreamble(rec.bytes, rec.count, rec.type.c_str(),
                                             rec.op.c_str(), rec.root);
              for (int p = 0; p < 2; ++p) {
                line += rowBody(rec.timeUs[p], rec.algBw[p], rec.busBw[p], rec.reportErrors[p],
                                rec.wrong[p]);
              }
              std::printf("%s\n", line.c_str());
              std::fflush(stdout);
            }
            R.results.push_back(rec);
          }
        }
      }
    }
    ++cycle;
  } while (a.cycles == 0 || cycle < a.cycles);

  // The device copy roof, measured now by every device rank at once (no collective runs any
  // more) at the sweep's largest size (at most 1 GiB) between the sweep's own device buffers;
  // host-memory ranks contribute nothing.
  const size_t largestSize = sizes.empty() ? 1 : *std::max_element(sizes.begin(), sizes.end());
  const size_t roofBytes = std::min({std::max<size_t>(largestSize, 1), size_t(1) << 30, R.bufBytes});
  const int roofReps = 5;
  CopyRoof roof;
  if (R.mem.device())
    R.checkMemory(measureCopyRoof(R.mem, R.sendBuf, R.recvBuf, roofBytes, roofReps, &roof));
  const int64_t deviceRanks = R.sumAcrossRanks(R.mem.device() ? 1 : 0);
  if (deviceRanks > 0) R.maxAcrossRanks(&roof);

  const double avgBw = R.bwCount ? R.bwSum / R.bwCount : 0.0;
  if (R.rank == 0) {
    std::printf("%s", footer(R.outOfBounds, avgBw).c_str());
    if (deviceRanks > 0)
      std::printf("%s", copyRoofLine(roof, roofBytes, roofReps, static_cast<int>(deviceRanks)).c_str());
    std::printf("# Collective test concluded: %s\n", R.program.c_str());
    std::fflush(stdout);
    if (!a.jsonPath.empty()) {
      std::vector<std::string> argList(argv, argv + argc);
      int libVersion = 0;
      mixcclGetVersion(&libVersion);
      std::string doc = jsonDocument(R.program, argList, startTime, wallClock(), R.configJson(),
                                     devices, R.results, R.outOfBounds, avgBw, libVersion);
      std::ofstream f(a.jsonPath);
      f << doc;
      if (!f) {
        std::fprintf(stderr, "%s: cannot write %s\n", R.program.c_str(), a.jsonPath.c_str());
      } else {
        std::printf("# Wrote JSON output to %s\n", a.jsonPath.c_str());
      }
    }
  }
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
