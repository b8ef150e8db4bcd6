// One rank's run of a *_perf tool (perfMain in perf_driver.cc makes and drives it): its
// communicator and buffers, the exits on failure, the watchdog, the driver's own small
// collectives (perf_runner.cc), the sweep of timed and checked measurements (perf_sweep.cc) and
// the report around the table: header, footer, copy roof and JSON (perf_report.cc).
#ifndef MIXCCL_PERF_RUNNER_H_
#define MIXCCL_PERF_RUNNER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "mixccl.h"
#include "mixccl_launch.h"
#include "perf_args.h"
#include "perf_copy_roof.h"
#include "perf_driver.h"
#include "perf_memory.h"
#include "perf_output.h"

namespace mixperf {

// Seconds on the steady clock.
double nowSec();
// The local date and time, "YYYY-MM-DD HH:MM:SS" (the JSON document's start and end).
std::string wallClock();

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

  // Failures end the process: the message on stderr, the communicator aborted, exit status 1.
  [[noreturn]] void fail(const char* what, mixcclResult_t res);
  void check(mixcclResult_t res, const char* what);
  [[noreturn]] void failMemory(const std::string& why);
  void checkMemory(const std::string& why);

  // The host mirror of a pointer into sendBuf or recvBuf.
  char* mirror(char* p);

  // Runs one small collective of the driver on host values in hostScratch: copied to scratch,
  // run on the rank's stream, copied back (no copies on host memory).
  void scratchCollective(size_t inBytes, size_t outOffset, size_t outBytes, const char* what,
                         mixcclResult_t (*op)(const void*, void*, Runner&));

  // With a timeout (-T), an operation armed for longer than it makes the watchdog abort the
  // communicator and end the process with status 3.
  void arm();
  void disarm();
  void startWatchdog();

  void barrier();
  // This rank's time becomes the job's, as -a says (rank 0's, mean, minimum or maximum).
  double aggregateTime(double sec);
  int64_t sumAcrossRanks(int64_t v);
  // Each bandwidth of the roof becomes the largest over ranks.
  void maxAcrossRanks(CopyRoof* roof);

  // The sweep (perf_sweep.cc): every type, op, root and size, warm-up then one out-of-place and
  // one in-place measurement each, a table row per size on rank 0; -N cycles.
  void sweep(const std::vector<size_t>& sizes, const std::vector<mixcclRedOp_t>& ops,
             const std::vector<int>& roots);
  void pointers(const Counts& c, size_t es, bool inPlace, char** send, char** recv);
  void runOnce(char* send, char* recv, const Counts& c, mixcclDataType_t t, mixcclRedOp_t op,
               int root);
  // One timed + checked measurement of one placement. Returns (time us, algbw, busbw, wrong).
  void bench(const Counts& c, mixcclDataType_t t, mixcclRedOp_t op, int root, bool inPlace,
             ResultRecord* rec);
  void fillSend(const DataJob& job, char* send);

  // The report (perf_report.cc): the header with one line per rank (gathered at rank 0), and
  // after the sweep the device copy roof, the footer and the JSON document (-J).
  void printHeader(const mixcclLaunchInfo& info, std::vector<DeviceRecord>* devices);
  void conclude(const std::vector<size_t>& sizes, const std::vector<DeviceRecord>& devices,
                const std::string& startTime, int argc, char** argv);
  std::string configJson();
};

}  // namespace mixperf

#endif  // MIXCCL_PERF_RUNNER_H_
