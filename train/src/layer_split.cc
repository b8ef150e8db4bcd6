#include "mixccl/train/layer_split.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace mixccl::train {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Slack when comparing sums accumulated in different orders.
double SumTolerance(double total) { return std::fabs(total) * 1e-12; }

// cost[j][n] for n in [1, N - P + 1]; index 0 unused.
std::vector<std::vector<double>> CostTable(int n_layers, int n_stages, const StageCostFn& cost) {
  const int longest = n_layers - n_stages + 1;
  std::vector<std::vector<double>> table(n_stages, std::vector<double>(longest + 1, kInf));
  for (int j = 0; j < n_stages; ++j) {
    for (int n = 1; n <= longest; ++n) table[j][n] = cost(j, n);
  }
  return table;
}

LayerSplit Summarize(const std::vector<int>& layers, const std::vector<std::vector<double>>& c) {
  LayerSplit s;
  s.feasible = true;
  s.layers = layers;
  for (size_t j = 0; j < layers.size(); ++j) s.total += c[j][layers[j]];
  if (!layers.empty()) {
    s.bottleneck = c[0][layers[0]];
    for (size_t j = 1; j < layers.size(); ++j)
      s.bottleneck = std::max(s.bottleneck, c[j][layers[j]]);
  }
  return s;
}

}  // namespace

LayerSplit SplitLayers(int num_layers, int num_stages, const StageCostFn& cost) {
  const int n_total = num_layers, p = num_stages;
  if (p < 1 || p > n_total) return {};
  const auto c = CostTable(n_total, p, cost);
  const int longest = n_total - p + 1;

  // Phase 1: best[j][b] = smallest bottleneck placing layers [0, b) on stages 0..j. Stage j's
  // prefix end b ranges over [j + 1, N - (P - 1 - j)].
  std::vector<std::vector<double>> best(p, std::vector<double>(n_total + 1, kInf));
  for (int b = 1; b <= longest; ++b) best[0][b] = c[0][b];
  for (int j = 1; j < p; ++j) {
    const int b_max = n_total - (p - 1 - j);
    for (int b = j + 1; b <= b_max; ++b) {
      // The previous stages end at a in [lo, hi]; stage j takes b - a layers.
      const int lo = std::max(j, b - longest), hi = b - 1;
      auto prev = [&](int a) { return best[j - 1][a]; };
      auto here = [&](int a) { return c[j][b - a]; };
      // First a where prev(a) >= here(a); prev rises and here falls with a.
      int left = lo, right = hi + 1;
      while (left < right) {
        const int mid = left + (right - left) / 2;
        if (prev(mid) >= here(mid))
          right = mid;
        else
          left = mid + 1;
      }
      double v = kInf;
      if (left <= hi) v = std::max(prev(left), here(left));
      if (left - 1 >= lo) v = std::min(v, std::max(prev(left - 1), here(left - 1)));
      best[j][b] = v;
    }
  }
  const double bottleneck = best[p - 1][n_total];
  if (!(bottleneck < kInf)) return {};

  // Phase 2: suffix[j][a] = smallest total cost placing layers [a, N) on stages j..P-1 with
  // every stage within the bottleneck.
  std::vector<int> widest(p, 0);
  for (int j = 0; j < p; ++j) {
    while (widest[j] < longest && c[j][widest[j] + 1] <= bottleneck) ++widest[j];
  }
  std::vector<std::vector<double>> suffix(p + 1, std::vector<double>(n_total + 1, kInf));
  suffix[p][n_total] = 0.0;
  for (int j = p - 1; j >= 0; --j) {
    const int a_min = j, a_max = n_total - (p - j);
    for (int a = a_min; a <= a_max; ++a) {
      double v = kInf;
      for (int n = 1; n <= widest[j] && a + n <= n_total - (p - 1 - j); ++n) {
        v = std::min(v, c[j][n] + suffix[j + 1][a + n]);
      }
      suffix[j][a] = v;
    }
  }
  const double target = suffix[0][0];
  const double limit = target + SumTolerance(target);

  // Reconstruction: at each stage the fewest layers that still allow an optimal completion.
  std::vector<int> layers(p, 0);
  int a = 0;
  double prefix = 0.0;
  for (int j = 0; j < p; ++j) {
    int chosen = 0;
    for (int n = 1; n <= widest[j] && a + n <= n_total - (p - 1 - j); ++n) {
      const double rest = suffix[j + 1][a + n];
      if (rest < kInf && prefix + c[j][n] + rest <= limit) {
        chosen = n;
        break;
      }
    }
    if (chosen == 0) return {};  // unreachable unless costs are not monotone
    layers[j] = chosen;
    prefix += c[j][chosen];
    a += chosen;
  }
  return Summarize(layers, c);
}

LayerSplit SplitLayersExhaustive(int num_layers, int num_stages, const StageCostFn& cost) {
  const int n_total = num_layers, p = num_stages;
  if (p < 1 || p > n_total) return {};
  const auto c = CostTable(n_total, p, cost);

  // Visit every composition of N into P positive parts in lexicographic order.
  std::vector<int> layers(p, 1);
  auto visit_all = [&](auto&& visit) {
    layers.assign(p, 1);
    layers[p - 1] = n_total - (p - 1);
    while (true) {
      visit(layers);
      // Next composition: find the rightmost stage before the last that can grow, i.e. one
      // whose right neighbours still hold more than one layer each in total.
      int k = p - 2;
      while (k >= 0) {
        int rest = 0;
        for (int i = k + 1; i < p; ++i) rest += layers[i];
        if (rest > p - 1 - k) break;
        --k;
      }
      if (k < 0) return;
      int rest = 0;
      for (int i = k + 1; i < p; ++i) rest += layers[i];
      ++layers[k];
      --rest;
      for (int i = k + 1; i < p - 1; ++i) layers[i] = 1;
      layers[p - 1] = rest - (p - 2 - k);
    }
  };
  auto max_of = [&](const std::vector<int>& l) {
    double v = c[0][l[0]];
    for (int j = 1; j < p; ++j) v = std::max(v, c[j][l[j]]);
    return v;
  };
  auto sum_of = [&](const std::vector<int>& l) {
    double v = 0.0;
    for (int j = 0; j < p; ++j) v += c[j][l[j]];
    return v;
  };

  double bottleneck = kInf;
  visit_all([&](const std::vector<int>& l) { bottleneck = std::min(bottleneck, max_of(l)); });
  if (!(bottleneck < kInf)) return {};
  double total = kInf;
  visit_all([&](const std::vector<int>& l) {
    if (max_of(l) <= bottleneck) total = std::min(total, sum_of(l));
  });
  const double limit = total + SumTolerance(total);
  std::vector<int> first;
  visit_all([&](const std::vector<int>& l) {
    if (first.empty() && max_of(l) <= bottleneck && sum_of(l) <= limit) first = l;
  });
  return Summarize(first, c);
}

}  // namespace mixccl::train
