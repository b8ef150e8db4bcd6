// reduce_scatter_perf: mixcclReduceScatter. algbw counts the whole input; busbw = algbw*(n-1)/n.
#include "common/perf_colls.h"

using namespace mixperf;

namespace {
mixcclResult_t run(const void* s, void* r, size_t count, mixcclDataType_t t, mixcclRedOp_t op,
                   int, mixcclComm_t comm, int, int, mixcclStream_t stream) {
  return mixcclReduceScatter(s, r, count, t, op, comm, stream);
}
void fillSend(const DataJob& j, void* send) { fillInput(*j.plan, j.rank, 0, j.counts.send, send); }
bool fillExpected(const DataJob& j, void* e) {
  fillReduced(*j.plan, j.counts.param * static_cast<size_t>(j.rank), j.counts.recv, e);
  return true;
}
}  // namespace

int main(int argc, char** argv) {
  const CollDesc desc{"ReduceScatter", true, false, true, countsScatterLike, factorN,
                      factorNm1OverN, run, fillSend, fillExpected};
  return perfMain(argc, argv, desc);
}
