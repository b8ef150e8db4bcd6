// Device speed, emulated on one kind of CPU. The cluster spec gives each device type the speed
// the planner uses, peak_tflops x achievable_fraction (DeviceType::achievable_flops); a rank of
// a type k times slower than the cluster's fastest type takes k times as long for its compute:
// it times each forward and backward, then idles for the difference (SlowdownIdler). The fastest
// type runs at the machine's own speed, so a plan that balances the emulated speeds balances
// the real run.
#pragma once

#include <string>

#include "mixccl/train/cluster_spec.h"

namespace mixccl::train {

// k = (the fastest type's achievable FLOP/s) / (this type's), >= 1; 1 for a type with
// `cpu_threads` (its speed is real: the machine's with that many BLAS threads). Throws
// std::invalid_argument "<origin>: no device type "<type>" (<where>)" for an unknown type.
double EmulatedSlowdown(const ClusterSpec& cluster, const std::string& type,
                        const std::string& origin, const std::string& where);

// The CPU time of the calling thread, seconds. An emulated device computes for k times the CPU
// time its operations took, not k times their wall time: a device is not preempted by the
// other processes of the machine that emulates it (on the shared build machine a preemption
// made single operations several times slower). With one BLAS thread per rank, as the tests
// and benchmarks run, the thread's CPU time is all of the operation's.
double ThreadCpuSeconds();

// What an operation costs on a rank with `blas_threads` BLAS threads: the thread's CPU time
// with one (0 or 1: as above), wall time with more (the other threads' CPU time is not the
// calling thread's, and a device of several threads is as fast as their wall time).
double ComputeSeconds(int blas_threads);

// OpenBLAS's thread count for this process (openblas_set_num_threads), checked: throws
// std::runtime_error "OpenBLAS runs M threads after openblas_set_num_threads(N) ..." when it
// did not take effect. BlasThreads() reads it back.
void SetBlasThreads(int n);
int BlasThreads();

// Idles after each operation so that the operations of a device `slowdown` times slower take
// `slowdown` x their CPU time: an operation that took `cpu_s` of CPU and `wall_s` of wall time
// idles for slowdown x cpu_s - wall_s (sleeping, not spinning: the emulated device leaves the
// CPU to the other ranks). A sleep overshoots (about 0.3 ms per operation on a loaded
// machine) and a preempted operation overruns its emulated time; both are paid back from the
// following idles, so over a step the emulated time stays slowdown x the CPU time. Returns
// the seconds idled, which the caller counts as compute.
class SlowdownIdler {
 public:
  explicit SlowdownIdler(double slowdown) : slowdown_(slowdown) {}
  double Idle(double cpu_s, double wall_s);
  // How far the device is behind its emulated timeline: overrun not paid back yet. At the end
  // of a run, the time it computed beyond `slowdown` x its CPU time; above zero when the
  // machine could not give it its share of the CPU (wall time beyond slowdown x CPU time), so
  // that the emulated device was slower than its type.
  double behind_s() const { return overrun_s_; }

 private:
  double slowdown_;
  double overrun_s_ = 0.0;  // time spent beyond the emulated timeline, not yet paid back
};

}  // namespace mixccl::train
