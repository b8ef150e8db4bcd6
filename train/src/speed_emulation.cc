#include "mixccl/train/speed_emulation.h"

#include <cblas.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>

namespace mixccl::train {

double EmulatedSlowdown(const ClusterSpec& cluster, const std::string& type,
                        const std::string& origin, const std::string& where) {
  const int i = cluster.FindType(type);
  if (i < 0) {
    throw std::invalid_argument(origin + ": no device type \"" + type + "\" (" + where + ")");
  }
  // A type with its own thread count computes at its real speed.
  if (cluster.device_types[i].cpu_threads > 0) return 1.0;
  double fastest = 0.0;
  for (const DeviceType& t : cluster.device_types)
    fastest = std::max(fastest, t.achievable_flops());
  return fastest / cluster.device_types[i].achievable_flops();
}

namespace {
double ClockSeconds(clockid_t clock) {
  timespec t{};
  clock_gettime(clock, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}
}  // namespace

double ThreadCpuSeconds() { return ClockSeconds(CLOCK_THREAD_CPUTIME_ID); }

double ComputeSeconds(int blas_threads) {
  return ClockSeconds(blas_threads <= 1 ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC);
}

void SetBlasThreads(int n) {
  openblas_set_num_threads(n);
  const int now = openblas_get_num_threads();
  if (now != n) {
    throw std::runtime_error("OpenBLAS runs " + std::to_string(now) +
                             " threads after openblas_set_num_threads(" + std::to_string(n) +
                             ") (its build allows fewer?)");
  }
}

int BlasThreads() { return openblas_get_num_threads(); }

double SlowdownIdler::Idle(double cpu_s, double wall_s) {
  if (slowdown_ <= 1.0) return 0.0;
  const double ask = slowdown_ * cpu_s - wall_s - overrun_s_;
  if (ask <= 0.0) {  // the operation (or an earlier one) already used up this idle
    overrun_s_ = -ask;
    return 0.0;
  }
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(ask));
  const double idled = std::chrono::duration<double>(Clock::now() - start).count();
  overrun_s_ = idled - ask;
  return idled;
}

}  // namespace mixccl::train
