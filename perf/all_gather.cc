// all_gather_perf: mixcclAllGather. algbw counts the whole gathered buffer; busbw = algbw*(n-1)/n.
#include "common/perf_colls.h"

using namespace mixperf;

namespace {
mixcclResult_t run(const void* s, void* r, size_t count, mixcclDataType_t t, mixcclRedOp_t,
                   int, mixcclComm_t comm, int, int, mixcclStream_t stream) {
  return mixcclAllGather(s, r, count, t, comm, stream);
}
void fillSend(const DataJob& j, void* send) { fillInput(*j.plan, j.rank, 0, j.counts.send, send); }
bool fillExpected(const DataJob& j, void* e) {
  const size_t c = j.counts.param;
  for (int q = 0; q < j.nranks; ++q) fillInput(*j.plan, q, 0, c, at(e, c * q, j));
  return true;
}
}  // namespace

int main(int argc, char** argv) {
  const CollDesc desc{"AllGather", false, false, true, countsGatherLike, factorN, factorNm1OverN,
                      run, fillSend, fillExpected};
  return perfMain(argc, argv, desc);
}
