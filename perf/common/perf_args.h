// Command line of the perf tools: nccl-tests' flags, parsed without global state so that the
// parser is unit-testable.
#ifndef MIXCCL_PERF_ARGS_H_
#define MIXCCL_PERF_ARGS_H_

#include <cstddef>
#include <string>
#include <vector>

#include "mixccl.h"

namespace mixperf {

struct PerfArgs {
  size_t minBytes = size_t(32) << 20;  // -b
  size_t maxBytes = size_t(32) << 20;  // -e
  size_t stepBytes = size_t(1) << 20;  // -i
  size_t stepFactor = 1;               // -f (1: disabled, -i is used)
  int iters = 20;                      // -n
  int warmupIters = 1;                 // -w
  int aggIters = 1;                    // -m
  int cycles = 1;                      // -N (0: forever)
  int check = 1;                       // -c
  int average = 1;                     // -a: 0 rank 0, 1 avg, 2 min, 3 max
  int timeoutSec = 0;                  // -T (0: none)
  std::vector<mixcclDataType_t> types{mixcclFloat32};  // -d
  std::vector<mixcclRedOp_t> ops{mixcclSum};           // -o
  int root = 0;                        // -r
  bool allRoots = false;               // -r all
  std::string jsonPath;                // -J
  // Self-test of the checker (-X RANK / --inject_error RANK): after each checked operation, rank
  // RANK flips one element of its result before comparing, so #wrong must become non-zero.
  int injectErrorRank = -1;
  // -M / --memory: auto, the memory of the rank's adaptor (device memory on device adaptors, as
  // nccl-tests); device, refused on a rank whose adaptor takes host memory; host, host buffers
  // (and so the host adaptor, unless MIXCCL_ADAPTOR names a host-memory one) even where the rank
  // would pick a device adaptor.
  enum class Memory { kAuto, kDevice, kHost };
  Memory memory = Memory::kAuto;
};

// "8", "1K", "16M", "2G", "1T" (binary multiples, case-insensitive, an optional trailing "B").
bool parseSize(const std::string& s, size_t* out);

enum class ParseResult { kOk, kHelp, kError };
// Parses argv[1..argc-1]. On kError, *err says why.
ParseResult parseArgs(int argc, const char* const* argv, PerfArgs* out, std::string* err);
std::string usage(const char* prog);

// The size sweep of nccl-tests: min, then min+step (-i) or min*factor (-f), while <= max. A
// sweep starting at 0 with a factor continues at 1 so that it terminates.
std::vector<size_t> sizeSweep(const PerfArgs& a);

}  // namespace mixperf

#endif  // MIXCCL_PERF_ARGS_H_
