#include "mixccl/train/zero_shards.h"

#include <stdexcept>

namespace mixccl::train {

std::vector<ParamRange> SplitByWeights(const ParamRange& whole, const std::vector<int>& weights) {
  long long total = 0;
  for (int w : weights) {
    if (w < 0) throw std::invalid_argument("shard weights must not be negative");
    total += w;
  }
  if (total == 0) throw std::invalid_argument("shard weights are all zero");
  std::vector<ParamRange> out;
  long long cumulative = 0;
  std::size_t begin = whole.offset;
  for (int w : weights) {
    cumulative += w;
    // 128-bit free: count * cumulative stays far below 2^63 for any model this trainer holds.
    const std::size_t end =
        whole.offset +
        static_cast<std::size_t>(static_cast<long double>(whole.count) * cumulative / total);
    out.push_back({begin, end - begin});
    begin = end;
  }
  return out;
}

}  // namespace mixccl::train
