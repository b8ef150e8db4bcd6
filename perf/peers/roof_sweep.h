// The size sweep the C++ roofs share (tcp_roof_perf, memcpy_roof_perf, ucx_roof_perf), printing
// the table perf/compare reads as it reads the perf tools'. Per size the out-of-place and
// in-place columns are two runs; a run is the fastest of the roof's variants (segment sizes,
// copy methods, ...), each timed on every rank and averaged over the ranks.
#ifndef MIXCCL_ROOF_SWEEP_H_
#define MIXCCL_ROOF_SWEEP_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <vector>

#include "peer_table.h"

// One size of the sweep in float32 elements, as the peers' table counts them.
struct RoofSize {
  size_t param = 0, sendElems = 0, recvElems = 0;
};

// One variant's run: seconds per call averaged over the ranks (<= 0: nothing was timed, as for a
// count of 0) and, with -c 1, the wrong bytes summed over the ranks.
struct RoofRun {
  double seconds = 0;
  int64_t wrong = 0;
};

inline double roofNow() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Times step(): the warm-up calls, a barrier, the timed calls; the mean over the ranks of the
// seconds per call. Group::sum(v) sums v over the ranks and gives it to every rank.
template <class Group, class Step>
double roofTime(Group& group, const peer_args& a, int nranks, Step&& step) {
  for (int w = 0; w < a.warmup; ++w) step();
  group.sum(0);
  double t0 = roofNow();
  for (int it = 0; it < a.iters; ++it) step();
  return group.sum((roofNow() - t0) / a.iters) / nranks;
}

// measure(size, variant) runs one variant once. note(size, busbw[run][variant]), where given, is
// called on rank 0 before each row (a roof's per-variant line). Prints the rows and the footer
// on rank 0; returns the number of runs with wrong bytes.
inline int roofSweep(
    const peer_args& a, int nranks, int rank, int variants,
    const std::function<RoofRun(const RoofSize&, int)>& measure,
    const std::function<void(const RoofSize&, const std::vector<double> (&)[2])>& note = nullptr) {
  int errors = 0, bwCount = 0, done = 0;
  double bwSum = 0;
  for (size_t s = a.min_bytes; !done; s = peer_next_size(&a, s, &done)) {
    RoofSize z;
    peer_counts(a.coll, s, nranks, &z.param, &z.sendElems, &z.recvElems);
    double us[2] = {0, 0}, alg[2] = {0, 0}, bus[2] = {0, 0};
    int64_t wrong[2] = {0, 0};
    std::vector<double> variantBus[2];
    for (int run = 0; run < 2; ++run) {
      double best = 0;
      for (int v = 0; v < variants; ++v) {
        RoofRun r = measure(z, v);
        wrong[run] += r.wrong;
        if (r.seconds <= 0) continue;
        double al, bu;
        peer_bw(a.coll, z.param, nranks, r.seconds, &al, &bu);
        variantBus[run].push_back(bu);
        if (best == 0 || r.seconds < best) {
          best = r.seconds;
          us[run] = r.seconds * 1e6;
          alg[run] = al;
          bus[run] = bu;
        }
      }
      if (wrong[run]) ++errors;
      if (best > 0) {
        bwSum += bus[run];
        ++bwCount;
      }
    }
    if (rank == 0) {
      if (note) note(z, variantBus);
      peer_print_row(a.coll, z.param, z.sendElems, z.recvElems, us, alg, bus, wrong);
    }
  }
  if (rank == 0) peer_print_footer(errors, bwCount ? bwSum / bwCount : 0);
  return errors;
}

#endif  // MIXCCL_ROOF_SWEEP_H_
