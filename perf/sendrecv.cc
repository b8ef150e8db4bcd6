// sendrecv_perf: each rank sends to rank+1 and receives from rank-1 in one group. busbw = algbw.
// Like nccl-tests, the in-place variant (one buffer for both) is timed but not checked.
#include "common/perf_colls.h"

using namespace mixperf;

namespace {
mixcclResult_t run(const void* s, void* r, size_t count, mixcclDataType_t t, mixcclRedOp_t, int,
                   mixcclComm_t comm, int rank, int n, mixcclStream_t stream) {
  mixcclResult_t res = mixcclGroupStart();
  if (res != mixcclSuccess) return res;
  mixcclResult_t a = mixcclSend(s, count, t, (rank + 1) % n, comm, stream);
  mixcclResult_t b = mixcclRecv(r, count, t, (rank - 1 + n) % n, comm, stream);
  res = mixcclGroupEnd();
  if (a != mixcclSuccess) return a;
  if (b != mixcclSuccess) return b;
  return res;
}
void fillSend(const DataJob& j, void* send) { fillInput(*j.plan, j.rank, 0, j.counts.send, send); }
bool fillExpected(const DataJob& j, void* e) {
  fillInput(*j.plan, (j.rank - 1 + j.nranks) % j.nranks, 0, j.counts.recv, e);
  return true;
}
}  // namespace

int main(int argc, char** argv) {
  const CollDesc desc{"SendRecv", false, false, false, countsWhole, factorOne, factorOne,
                      run, fillSend, fillExpected};
  return perfMain(argc, argv, desc);
}
