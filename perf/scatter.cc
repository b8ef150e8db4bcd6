// scatter_perf: mixcclScatter. algbw counts the scattered buffer; busbw = algbw*(n-1)/n.
#include "common/perf_colls.h"

using namespace mixperf;

namespace {
mixcclResult_t run(const void* s, void* r, size_t count, mixcclDataType_t t, mixcclRedOp_t,
                   int root, mixcclComm_t comm, int, int, mixcclStream_t stream) {
  return mixcclScatter(s, r, count, t, root, comm, stream);
}
// Every rank fills a full buffer with its own data; only the root's is scattered.
void fillSend(const DataJob& j, void* send) { fillInput(*j.plan, j.rank, 0, j.counts.send, send); }
bool fillExpected(const DataJob& j, void* e) {
  const size_t c = j.counts.param;
  fillInput(*j.plan, j.root, c * static_cast<size_t>(j.rank), c, e);
  return true;
}
}  // namespace

int main(int argc, char** argv) {
  const CollDesc desc{"Scatter", false, true, true, countsScatterLike, factorN, factorNm1OverN,
                      run, fillSend, fillExpected};
  return perfMain(argc, argv, desc);
}
