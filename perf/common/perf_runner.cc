// A rank's run of a *_perf tool (perf_runner.h): the exits on failure, the watchdog, and the
// driver's own small collectives over the scratch buffer (barrier, time aggregation, sums and
// maxima over ranks).
#include "perf_runner.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

namespace mixperf {

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

void Runner::fail(const char* what, mixcclResult_t res) {
  std::fprintf(stderr, "%s: rank %d: %s failed: %s: %s\n", program.c_str(), rank, what,
               mixcclGetErrorString(res), mixcclGetLastError(comm));
  std::fflush(stderr);
  if (comm != nullptr) mixcclCommAbort(comm);
  std::_Exit(1);
}

void Runner::check(mixcclResult_t res, const char* what) {
  if (res != mixcclSuccess) fail(what, res);
}

void Runner::failMemory(const std::string& why) {
  std::fprintf(stderr, "%s: rank %d: %s\n", program.c_str(), rank, why.c_str());
  std::fflush(stderr);
  if (comm != nullptr) mixcclCommAbort(comm);
  std::_Exit(1);
}

void Runner::checkMemory(const std::string& why) {
  if (!why.empty()) failMemory(why);
}

char* Runner::mirror(char* p) {
  if (p >= recvBuf && p < recvBuf + bufBytes) return hostRecv + (p - recvBuf);
  return hostSend + (p - sendBuf);
}

void Runner::scratchCollective(size_t inBytes, size_t outOffset, size_t outBytes, const char* what,
                               mixcclResult_t (*op)(const void*, void*, Runner&)) {
  checkMemory(mem.upload(scratch, hostScratch, inBytes));
  arm();
  check(op(scratch, scratch + outOffset, *this), what);
  checkMemory(mem.synchronize());
  disarm();
  checkMemory(mem.download(hostScratch + outOffset, scratch + outOffset, outBytes));
}

void Runner::arm() {
  if (args.timeoutSec > 0) opStart.store(nowSec());
}

void Runner::disarm() {
  if (args.timeoutSec > 0) opStart.store(0.0);
}

void Runner::startWatchdog() {
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

void Runner::barrier() {
  int32_t one = 1;
  std::memcpy(hostScratch, &one, sizeof(one));
  scratchCollective(8, 8, 4, "barrier", [](const void* in, void* out, Runner& R) {
    return mixcclAllReduce(in, out, 1, mixcclInt32, mixcclSum, R.comm, R.mem.stream());
  });
}

double Runner::aggregateTime(double sec) {
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

int64_t Runner::sumAcrossRanks(int64_t v) {
  std::memcpy(hostScratch, &v, sizeof(v));
  scratchCollective(8, 8, 8, "error count sum", [](const void* in, void* out, Runner& R) {
    return mixcclAllReduce(in, out, 1, mixcclInt64, mixcclSum, R.comm, R.mem.stream());
  });
  int64_t out;
  std::memcpy(&out, hostScratch + 8, sizeof(out));
  return out;
}

void Runner::maxAcrossRanks(CopyRoof* roof) {
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

}  // namespace mixperf
