// broadcast_perf: mixcclBroadcast. busbw = algbw.
#include "common/perf_colls.h"

using namespace mixperf;

namespace {
mixcclResult_t run(const void* s, void* r, size_t count, mixcclDataType_t t, mixcclRedOp_t,
                   int root, mixcclComm_t comm, int, int, mixcclStream_t stream) {
  return mixcclBroadcast(s, r, count, t, root, comm, stream);
}
// Every rank writes its own data; only the root's may arrive anywhere.
void fillSend(const DataJob& j, void* send) { fillInput(*j.plan, j.rank, 0, j.counts.send, send); }
bool fillExpected(const DataJob& j, void* e) {
  fillInput(*j.plan, j.root, 0, j.counts.recv, e);
  return true;
}
}  // namespace

int main(int argc, char** argv) {
  const CollDesc desc{"Broadcast", false, true, true, countsWhole, factorOne, factorOne,
                      run, fillSend, fillExpected};
  return perfMain(argc, argv, desc);
}
