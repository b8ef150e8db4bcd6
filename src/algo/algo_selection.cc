#include "algo/algorithms.h"
#include "core/env.h"

namespace mixccl {

AllReduceAlgo chooseAllReduceAlgo(size_t bytes, int nranks) {
  const std::string& forced = env().algo;
  if (forced == "ring") return AllReduceAlgo::Ring;
  if (forced == "rd") return AllReduceAlgo::RecursiveDoubling;
  return bytes < env().rdThresholdBytes && nranks > 1 ? AllReduceAlgo::RecursiveDoubling
                                                     : AllReduceAlgo::Ring;
}

}  // namespace mixccl
