#include "algo/algorithms.h"

#include <string>

#include "base/env.h"

namespace mixccl {
namespace {

// The recursive algorithms pair rank r with r ^ mask, which needs a power-of-two count.
bool isPowerOfTwo(int n) { return n > 1 && (n & (n - 1)) == 0; }

}  // namespace

AllReduceAlgo chooseAllReduceAlgo(size_t bytes, int nranks, size_t rhThresholdBytes) {
  const std::string& forced = env().algo;
  if (forced == "ring") return AllReduceAlgo::Ring;
  if (forced == "rd") return AllReduceAlgo::RecursiveDoubling;
  const bool powerOfTwo = isPowerOfTwo(nranks);
  if (forced == "rh" && powerOfTwo) return AllReduceAlgo::RecursiveHalving;
  if (bytes < env().rdThresholdBytes && nranks > 1) return AllReduceAlgo::RecursiveDoubling;
  // With 4+ ranks, 2 log2(n) exchanges beat the ring's 2(n-1) steps up to a few MiB
  // (docs/performance.md, "Sizes that follow the machine"); above, the ring's pipelining wins.
  if (powerOfTwo && nranks >= 4 && bytes < rhThresholdBytes)
    return AllReduceAlgo::RecursiveHalving;
  return AllReduceAlgo::Ring;
}

const char* allReduceAlgoName(AllReduceAlgo algo) {
  switch (algo) {
    case AllReduceAlgo::Ring: return "ring";
    case AllReduceAlgo::RecursiveDoubling: return "rd";
    case AllReduceAlgo::RecursiveHalving: return "rh";
  }
  return "?";
}

bool useRecursiveDoublingAllGather(size_t totalBytes, int nranks, size_t rhThresholdBytes) {
  const bool powerOfTwo = isPowerOfTwo(nranks);
  if (env().algo == "ring") return false;
  if (env().algo == "rh" && powerOfTwo) return true;
  return powerOfTwo && nranks >= 4 && totalBytes < rhThresholdBytes;
}

}  // namespace mixccl
