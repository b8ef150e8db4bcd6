// alltoall_perf: mixcclAlltoAll. algbw counts the whole buffer; busbw = algbw*(n-1)/n.
#include "common/perf_colls.h"

using namespace mixperf;

namespace {
void counts(size_t count, size_t es, int n, Counts* c) {
  size_t base = perRankCount(count, es, n);
  c->param = base;
  c->send = c->recv = base * static_cast<size_t>(n);
  c->sendInplaceOffset = c->recvInplaceOffset = 0;
}
mixcclResult_t run(const void* s, void* r, size_t count, mixcclDataType_t t, mixcclRedOp_t,
                   int, mixcclComm_t comm, int, int, mixcclStream_t stream) {
  return mixcclAlltoAll(s, r, count, t, comm, stream);
}
// Block p of rank r's send buffer goes to rank p; block q of the receive buffer comes from q.
void fillSend(const DataJob& j, void* send) { fillInput(*j.plan, j.rank, 0, j.counts.send, send); }
bool fillExpected(const DataJob& j, void* e) {
  const size_t c = j.counts.param;
  for (int q = 0; q < j.nranks; ++q) {
    fillInput(*j.plan, q, c * static_cast<size_t>(j.rank), c, at(e, c * q, j));
  }
  return true;
}
}  // namespace

int main(int argc, char** argv) {
  const CollDesc desc{"AlltoAll", false, false, true, counts, factorN, factorNm1OverN,
                      run, fillSend, fillExpected};
  return perfMain(argc, argv, desc);
}
