// gather_perf: mixcclGather. algbw counts the gathered buffer; busbw = algbw*(n-1)/n.
#include "common/perf_colls.h"

using namespace mixperf;

namespace {
mixcclResult_t run(const void* s, void* r, size_t count, mixcclDataType_t t, mixcclRedOp_t,
                   int root, mixcclComm_t comm, int, int, mixcclStream_t stream) {
  return mixcclGather(s, r, count, t, root, comm, stream);
}
void fillSend(const DataJob& j, void* send) { fillInput(*j.plan, j.rank, 0, j.counts.send, send); }
bool fillExpected(const DataJob& j, void* e) {
  if (j.rank != j.root) return false;
  const size_t c = j.counts.param;
  for (int q = 0; q < j.nranks; ++q) fillInput(*j.plan, q, 0, c, at(e, c * q, j));
  return true;
}
}  // namespace

int main(int argc, char** argv) {
  const CollDesc desc{"Gather", false, true, true, countsGatherLike, factorN, factorNm1OverN,
                      run, fillSend, fillExpected};
  return perfMain(argc, argv, desc);
}
