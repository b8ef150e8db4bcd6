// all_reduce_perf: mixcclAllReduce. busbw = algbw * 2(n-1)/n.
#include "common/perf_colls.h"

using namespace mixperf;

namespace {
double busFactor(int n) { return 2.0 * (n - 1) / n; }
mixcclResult_t run(const void* s, void* r, size_t count, mixcclDataType_t t, mixcclRedOp_t op,
                   int, mixcclComm_t comm, int, int, mixcclStream_t stream) {
  return mixcclAllReduce(s, r, count, t, op, comm, stream);
}
void fillSend(const DataJob& j, void* send) { fillInput(*j.plan, j.rank, 0, j.counts.send, send); }
bool fillExpected(const DataJob& j, void* e) {
  fillReduced(*j.plan, 0, j.counts.recv, e);
  return true;
}
}  // namespace

int main(int argc, char** argv) {
  const CollDesc desc{"AllReduce", true, false, true, countsWhole, factorOne, busFactor,
                      run, fillSend, fillExpected};
  return perfMain(argc, argv, desc);
}
