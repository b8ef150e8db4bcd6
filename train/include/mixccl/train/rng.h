// A small deterministic random number generator (SplitMix64) with its own normal sampler, so
// that initial weights and generated data are the same on every platform and standard library
// (std::normal_distribution is implementation-defined).
#pragma once

#include <cmath>
#include <cstdint>

namespace mixccl::train {

class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(seed) {}

  std::uint64_t NextU64() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1) with 53 random bits.
  double Uniform() { return static_cast<double>(NextU64() >> 11) * 0x1.0p-53; }
  // Uniform integer in [0, n); the tiny modulo bias does not matter for weights or data.
  std::uint64_t Below(std::uint64_t n) { return NextU64() % n; }
  // Standard normal by Box-Muller; one sample per call keeps the sequence easy to reason about.
  double Normal() {
    const double u1 = 1.0 - Uniform();  // (0, 1]: log is finite
    const double u2 = Uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

 private:
  std::uint64_t state_;
};

// Mixes two values into one seed, e.g. (run seed, parameter tensor id).
inline std::uint64_t MixSeed(std::uint64_t a, std::uint64_t b) {
  Rng r(a ^ (b * 0xD1B54A32D192ED03ull));
  return r.NextU64();
}

}  // namespace mixccl::train
