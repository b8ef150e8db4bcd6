// Finite-difference gradient checking for the fp32 model kernels.
//
// The objective is a scalar computed in double from fp32 outputs, usually <r, out> for a fixed
// random r, whose gradient wrt `out` is r. A central difference D(h) = (f(x+h) - f(x-h)) / 2h
// has a truncation error c h^2 + O(h^4) and a rounding error of about
// sqrt(#outputs) * 6e-8 * |f| / h from the fp32 forward. The whole model behind layernorms has
// enough curvature that c h^2 alone is 2e-3 of the gradient at h = 1e-2 (measured: it falls
// fourfold when h halves), while a smaller h lets rounding grow. Richardson's extrapolation
// (4 D(h/2) - D(h)) / 3 cancels the h^2 term, which leaves about 1e-4 at h = 1e-2.
// The comparison is over the whole sampled vector, ||analytic - numeric|| / ||numeric||, which
// is robust to single entries that are close to zero.
#pragma once

#include <cmath>
#include <cstddef>
#include <functional>
#include <vector>

#include "mixccl/train/rng.h"

namespace mixccl::train::testing {

struct GradCheckResult {
  double rel_error = 0.0;  // ||analytic - numeric|| / ||numeric|| over the checked entries
  double numeric_norm = 0.0;
  int checked = 0;
};

// Checks up to `max_samples` entries of x (all when n is smaller; otherwise a deterministic
// sample), perturbing x in place and restoring it.
inline GradCheckResult CheckGradient(float* x, size_t n, const float* analytic,
                                     const std::function<double()>& objective, int max_samples = 48,
                                     float h = 1e-2f) {
  Rng rng(n * 7919 + 17);
  std::vector<size_t> idx;
  if (n <= static_cast<size_t>(max_samples)) {
    for (size_t i = 0; i < n; ++i) idx.push_back(i);
  } else {
    for (int k = 0; k < max_samples; ++k) idx.push_back(rng.Below(n));
  }
  double diff2 = 0.0, num2 = 0.0;
  for (size_t i : idx) {
    const float saved = x[i];
    auto central = [&](float step) {
      x[i] = saved + step;
      const double up = objective();
      x[i] = saved - step;
      const double down = objective();
      x[i] = saved;
      // The perturbed values are rounded to fp32; divide by the step actually taken.
      return (up - down) / (static_cast<double>(saved + step) - static_cast<double>(saved - step));
    };
    const double numeric = (4.0 * central(h / 2) - central(h)) / 3.0;
    diff2 += (analytic[i] - numeric) * (analytic[i] - numeric);
    num2 += numeric * numeric;
  }
  GradCheckResult r;
  r.checked = static_cast<int>(idx.size());
  r.numeric_norm = std::sqrt(num2);
  r.rel_error = std::sqrt(diff2) / std::max(r.numeric_norm, 1e-12);
  return r;
}

inline std::vector<float> RandomVector(size_t n, std::uint64_t seed, float scale = 1.0f) {
  Rng rng(seed);
  std::vector<float> v(n);
  for (float& x : v) x = scale * static_cast<float>(rng.Normal());
  return v;
}

// <r, out> in double.
inline double Dot(const std::vector<float>& r, const std::vector<float>& out) {
  double s = 0.0;
  for (size_t i = 0; i < r.size(); ++i) s += static_cast<double>(r[i]) * out[i];
  return s;
}

}  // namespace mixccl::train::testing
