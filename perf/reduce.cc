// reduce_perf: mixcclReduce. busbw = algbw. Only the root's result is checked.
#include "common/perf_colls.h"

using namespace mixperf;

namespace {
mixcclResult_t run(const void* s, void* r, size_t count, mixcclDataType_t t, mixcclRedOp_t op,
                   int root, mixcclComm_t comm, int, int, mixcclStream_t stream) {
  return mixcclReduce(s, r, count, t, op, root, comm, stream);
}
void fillSend(const DataJob& j, void* send) { fillInput(*j.plan, j.rank, 0, j.counts.send, send); }
bool fillExpected(const DataJob& j, void* e) {
  if (j.rank != j.root) return false;
  fillReduced(*j.plan, 0, j.counts.recv, e);
  return true;
}
}  // namespace

int main(int argc, char** argv) {
  const CollDesc desc{"Reduce", true, true, true, countsWhole, factorOne, factorOne,
                      run, fillSend, fillExpected};
  return perfMain(argc, argv, desc);
}
