// The sweep of a *_perf tool (perf_runner.h): for every type, op, root and size a warm-up, then
// one out-of-place and one in-place measurement, each timed over the iterations and checked
// against the expected data, and a table row per size on rank 0.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "perf_data.h"
#include "perf_runner.h"
#include "perf_types.h"

namespace mixperf {

void Runner::pointers(const Counts& c, size_t es, bool inPlace, char** send, char** recv) {
  *send = inPlace ? recvBuf + c.sendInplaceOffset * static_cast<size_t>(rank) * es : sendBuf;
  *recv = recvBuf + (inPlace ? c.recvInplaceOffset * static_cast<size_t>(rank) * es : 0);
}

void Runner::runOnce(char* send, char* recv, const Counts& c, mixcclDataType_t t, mixcclRedOp_t op,
                     int root) {
  arm();
  check(coll.run(send, recv, c.param, t, op, root, comm, rank, nranks, mem.stream()), coll.name);
  checkMemory(mem.synchronize());
  disarm();
}

void Runner::bench(const Counts& c, mixcclDataType_t t, mixcclRedOp_t op, int root, bool inPlace,
                   ResultRecord* rec) {
  const size_t es = typeInfo(t).size;
  const int p = inPlace ? 1 : 0;
  char *send, *recv;
  pointers(c, es, inPlace, &send, &recv);
  // Benign values for the timed runs (0 is exact in every type, never a NaN or a denormal).
  std::memset(mirror(send), 0, c.send * es);
  checkMemory(mem.upload(send, mirror(send), c.send * es));

  runOnce(send, recv, c, t, op, root);  // sync, like nccl-tests
  barrier();
  double t0 = nowSec();
  for (int it = 0; it < args.iters; ++it) {
    if (args.aggIters > 1) check(mixcclGroupStart(), "mixcclGroupStart");
    for (int a = 0; a < args.aggIters; ++a) {
      arm();
      mixcclResult_t res =
          coll.run(send, recv, c.param, t, op, root, comm, rank, nranks, mem.stream());
      if (res != mixcclSuccess) fail(coll.name, res);
    }
    if (args.aggIters > 1) check(mixcclGroupEnd(), "mixcclGroupEnd");
  }
  checkMemory(mem.synchronize());  // stream-ordered work counts until it has finished
  double sec = (nowSec() - t0) / (static_cast<double>(args.iters) * args.aggIters);
  disarm();
  sec = aggregateTime(sec);

  const double bytes = static_cast<double>(c.param * es);
  double algBw = sec > 0 ? bytes * coll.algFactor(nranks) / 1.0e9 / sec : 0.0;
  double busBw = algBw * coll.busFactor(nranks);

  int64_t wrong = 0;
  const bool report = !(inPlace && !coll.inPlaceChecked);
  if (report) {
    for (int rep = 0; rep < args.check; ++rep) {
      DataPlan plan = makePlan(t, op, coll.reduction, nranks,
                               0x6d69786363ULL * (++checkCounter) + 17);
      DataJob job{&plan, rank, nranks, root, c};
      const size_t recvSpan = std::max(c.send, c.recv) * es;
      poison(hostRecv, recvSpan);
      checkMemory(mem.upload(recvBuf, hostRecv, recvSpan));
      fillSend(job, mirror(send));
      checkMemory(mem.upload(send, mirror(send), c.send * es));
      bool checked = coll.fillExpected(job, expBuf);
      runOnce(send, recv, c, t, op, root);
      char* got = mirror(recv);
      checkMemory(mem.download(got, recv, c.recv * es));
      if (args.injectErrorRank == rank && checked && c.recv > 0) {
        got[(c.recv / 2) * es] ^= 0x01;
      }
      int64_t mine = checked ? static_cast<int64_t>(countMismatches(t, got, expBuf, c.recv)) : 0;
      if (mine != 0) {
        std::fprintf(stderr, "%s: rank %d: %lld wrong element(s) of %zu (%s %s %s root %d %s)\n",
                     program.c_str(), rank, static_cast<long long>(mine), c.recv, coll.name,
                     typeInfo(t).name, coll.reduction ? opInfo(op).name : "none", root,
                     inPlace ? "in-place" : "out-of-place");
      }
      wrong = sumAcrossRanks(mine);
      if (wrong != 0) break;
    }
  }
  rec->timeUs[p] = sec * 1e6;
  rec->algBw[p] = algBw;
  rec->busBw[p] = busBw;
  rec->wrong[p] = wrong;
  rec->reportErrors[p] = report;
  if (report && wrong != 0) ++outOfBounds;
  bwSum += busBw;
  ++bwCount;
}

void Runner::fillSend(const DataJob& job, char* send) { coll.fillSend(job, send); }

void Runner::sweep(const std::vector<size_t>& sizes, const std::vector<mixcclRedOp_t>& ops,
                   const std::vector<int>& roots) {
  int cycle = 0;
  do {
    for (mixcclDataType_t t : args.types) {
      const size_t es = typeInfo(t).size;
      for (mixcclRedOp_t op : ops) {
        for (int root : roots) {
          const int callRoot = root < 0 ? 0 : root;
          // Warm-up over all sizes, out of place.
          for (size_t s : sizes) {
            Counts c;
            coll.getCounts(s / es, es, nranks, &c);
            char *send, *recv;
            pointers(c, es, false, &send, &recv);
            for (int w = 0; w < args.warmupIters; ++w) runOnce(send, recv, c, t, op, callRoot);
          }
          for (size_t s : sizes) {
            Counts c;
            coll.getCounts(s / es, es, nranks, &c);
            ResultRecord rec;
            rec.bytes = std::max(c.send, c.recv) * es;
            rec.count = c.param;
            rec.type = typeInfo(t).name;
            rec.op = coll.reduction ? opInfo(op).name : "none";
            rec.root = root;
            bench(c, t, op, callRoot, false, &rec);
            bench(c, t, op, callRoot, true, &rec);
            if (rank == 0) {
              std::string line = rowPreamble(rec.bytes, rec.count, rec.type.c_str(),
                                             rec.op.c_str(), rec.root);
              for (int p = 0; p < 2; ++p) {
                line += rowBody(rec.timeUs[p], rec.algBw[p], rec.busBw[p], rec.reportErrors[p],
                                rec.wrong[p]);
              }
              std::printf("%s\n", line.c_str());
              std::fflush(stdout);
            }
            results.push_back(rec);
          }
        }
      }
    }
    ++cycle;
  } while (args.cycles == 0 || cycle < args.cycles);
}

}  // namespace mixperf
