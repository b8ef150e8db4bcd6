// The argument errors of mixcclCommShrink, mixcclCommRevoke, mixcclCommGrow and
// mixcclCommGetUniqueId, each with its exact message, refused before anything is sent.
#include <string>

#include "shrink_harness.h"

namespace shrinktest {
namespace {

// Bad arguments of shrink, revoke and grow leave the communicator usable (one rank: no peers
// needed).
TEST(ShrinkArgs, BadArgumentsAreRefused) {
  Job job(1, 30);
  ASSERT_TRUE(job.ok());
  job.start([&](const mixcclUniqueId& id, int rank, int n, Shared* sh) {
    RankReport* rep = &sh->ranks[rank];
    mixcclComm_t comm;
    if (initRank(&comm, id, rank, n, "socket") != mixcclSuccess) return 10;
    mixcclComm_t out = nullptr;
    int self[] = {0}, range[] = {5};
    std::string all;
    // The message of comm's last error (of the thread's, for a call without comm).
    auto note = [&](mixcclResult_t r, mixcclComm_t of = nullptr) {
      all += std::to_string(r) + ":" + mixcclGetLastError(of) + "\n";
    };
    note(mixcclCommShrink(comm, self, 1, &out, nullptr, MIXCCL_SHRINK_DEFAULT), comm);
    note(mixcclCommShrink(comm, range, 1, &out, nullptr, MIXCCL_SHRINK_DEFAULT), comm);
    note(mixcclCommShrink(comm, nullptr, 0, &out, nullptr, 7), comm);
    note(mixcclCommRevoke(comm, 1), comm);
    mixcclUniqueId growId;
    note(mixcclCommGrow(comm, 2, nullptr, 0, &out, nullptr), comm);
    note(mixcclCommGrow(comm, 1, nullptr, -1, &out, nullptr), comm);
    note(mixcclCommGrow(comm, 2, nullptr, -1, &out, nullptr), comm);
    note(mixcclCommGrow(nullptr, 2, nullptr, 1, &out, nullptr));
    note(mixcclCommGetUniqueId(comm, nullptr), comm);
    if (mixcclCommGetUniqueId(comm, &growId) != mixcclSuccess) return 13;
    fault::copyMessage(rep, all.c_str());
    int bad = exactAllReduce(comm, 10);
    return mixcclCommDestroy(comm) == mixcclSuccess ? bad : 12;
  });
  ASSERT_TRUE(job.waitExit());
  EXPECT_EQ(job.exitCode(0), 0);
  EXPECT_EQ(std::string(job.report(0).message),
            "5:mixcclCommShrink: this rank (0) is in its own exclude list: excluded ranks do not "
            "call mixcclCommShrink\n"
            "4:mixcclCommShrink: excluded rank 5 is out of range [0, 1)\n"
            "4:mixcclCommShrink: flags 0x7 is neither MIXCCL_SHRINK_DEFAULT nor "
            "MIXCCL_SHRINK_ABORT\n"
            "4:mixcclCommRevoke: flags 0x1 must be MIXCCL_REVOKE_DEFAULT (0)\n"
            "4:mixcclCommGrow: rank 0 must be -1 on a rank of comm (it keeps its rank 0)\n"
            "4:mixcclCommGrow: nranks 1 must exceed comm's 1 ranks\n"
            "5:mixcclCommGrow: no rank of comm passed the unique id (the rank that called "
            "mixcclCommGetUniqueId passes it, the others NULL)\n"
            "4:mixcclCommGrow: a joining rank (comm NULL) needs the unique id\n"
            "4:mixcclCommGetUniqueId: uniqueId is NULL\n");
}

}  // namespace
}  // namespace shrinktest
