// Multi-rank jobs on the nccl adaptor, as real processes over real sockets: with the stand-in
// runtime and NCCL-API library in CI (MIXCCL_NCCL_LIBRARY, MIXCCL_CUDA_RUNTIME_LIBRARY name
// them), and with NVIDIA's on a GPU machine (scripts/gpu-check.sh: one GPU rank, as NCCL
// refuses two ranks on one GPU, beside host and gloo ranks).
//   nccl_ranks_test NRANKS ADAPTORS SUITE [--quick]
// ADAPTORS gives rank r its adaptor (item r), e.g. nccl,nccl,nccl or nccl,host,gloo,host.
// SUITE: matrix (ranks_matrix.h), order (ranks_order.h), shrink (ranks_shrink.h), or an error
// case (ranks_errors.h).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "rank_harness.h"
#include "ranks_buffers.h"
#include "ranks_errors.h"
#include "ranks_matrix.h"
#include "ranks_order.h"
#include "ranks_shrink.h"

namespace {

struct Options {
  std::string suite;
  bool quick = false;
  bool mixed = false;  // ranks on more than one adaptor
};

int rankMain(mixcclComm_t comm, int rank, int nranks, void* arg) {
  const Options& opt = *static_cast<const Options*>(arg);
  char adaptor[32];
  harnessListItem(gHarnessAdaptors, rank, adaptor, sizeof adaptor);
  ranks_test::RankBuffers buffers(comm, rank);
  long failures = buffers.failures();
  char memory[16] = "";
  if (mixcclCommInspect(comm, "memory", memory, sizeof memory) != mixcclSuccess ||
      std::strcmp(memory, buffers.device() ? "device" : "host") != 0 ||
      buffers.device() != (std::strcmp(adaptor, "nccl") == 0)) {
    std::fprintf(stderr, "rank %d (%s): memory '%s', expected %s memory\n", rank, adaptor, memory,
                 std::strcmp(adaptor, "nccl") == 0 ? "device" : "host");
    ++failures;
  }
  if (opt.suite == "matrix") {
    if (!opt.mixed) {
      // One nccl domain: every collective goes to the library itself.
      char route[32] = "";
      mixcclCommInspect(comm, "algo.allreduce.4096", route, sizeof route);
      if (buffers.device() && std::strcmp(route, "native") != 0) {
        std::fprintf(stderr, "rank %d: AllReduce runs '%s', expected native\n", rank, route);
        ++failures;
      }
    }
    ranks_test::MatrixTally t = ranks_test::runMatrix(comm, buffers, rank, nranks, opt.quick, /*sendRecv=*/true);
    std::printf("rank %d (%s): %ld checks, %ld failures\n", rank, adaptor, t.checks, t.failures);
    failures += t.failures;
  } else if (opt.suite == "order") {
    failures += ranks_test::runStreamOrder(comm, buffers, rank, nranks);
  } else if (opt.suite == "shrink") {
    failures += ranks_test::runShrink(comm, buffers, rank, nranks);
  } else {
    failures += ranks_test::runErrorCase(opt.suite, comm, buffers, rank, nranks);
  }
  mixcclResult_t async = mixcclSuccess;
  if (opt.suite == "matrix" || opt.suite == "order") {
    mixcclCommGetAsyncError(comm, &async);
    if (async != mixcclSuccess) {
      std::fprintf(stderr, "rank %d: async error %d: %s\n", rank, static_cast<int>(async), mixcclGetLastError(comm));
      ++failures;
    }
  }
  failures += buffers.failures();
  std::fflush(stdout);
  return failures ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s NRANKS ADAPTORS SUITE [--quick]\n", argv[0]);
    return 2;
  }
  Options opt;
  const int nranks = std::atoi(argv[1]);
  gHarnessAdaptors = argv[2];
  opt.suite = argv[3];
  for (int a = 4; a < argc; ++a) {
    if (std::strcmp(argv[a], "--quick") == 0) {
      opt.quick = true;
    } else {
      std::fprintf(stderr, "unknown argument %s\n", argv[a]);
      return 2;
    }
  }
  if (!ranks_test::knownSuite(opt.suite) && opt.suite != "shrink") {
    std::fprintf(stderr, "unknown suite %s\n", opt.suite.c_str());
    return 2;
  }
  char first[32], item[32];
  harnessListItem(gHarnessAdaptors, 0, first, sizeof first);
  for (int r = 1; r < nranks; ++r) {
    harnessListItem(gHarnessAdaptors, r, item, sizeof item);
    opt.mixed = opt.mixed || std::strcmp(item, first) != 0;
  }
  if (nranks < 1 || nranks > 8) {
    std::fprintf(stderr, "%d ranks: the inputs tell 1 to 8 ranks apart\n", nranks);
    return 2;
  }
  gHarnessRankSetup = ranks_test::prepareErrorCase(opt.suite);
  if (opt.suite == "shrink") gHarnessKilledRank = ranks_test::shrinkVictim(nranks);
  const double start = harnessNow();
  const int rc = runRanks(nranks, rankMain, &opt, 240);
  std::printf("nccl ranks %s %s (%s): %s in %.1f s\n", opt.suite.c_str(), argv[2], opt.quick ? "quick" : "full",
              rc ? "FAILED" : "passed", harnessNow() - start);
  return rc;
}
