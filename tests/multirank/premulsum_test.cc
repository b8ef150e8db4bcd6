// mixcclRedOpCreatePreMulSum / mixcclRedOpDestroy across forked ranks: AllReduce, Reduce and
// ReduceScatter with host-immediate and in-memory scalars, inside a group, and every refusal
// with its exact message.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

extern "C" {
#include "rank_harness.h"
}
#include "rank_check.h"

namespace {

// Rank r contributes r + 1 + i at element i and scales by (r + 1) for AllReduce: the sum over
// ranks of (r + 1) * (r + 1 + i).
double expectedSum(int nranks, size_t i) {
  double s = 0;
  for (int r = 0; r < nranks; ++r) s += (r + 1.0) * (r + 1.0 + static_cast<double>(i));
  return s;
}

int collectivesRank(mixcclComm_t comm, int rank, int nranks, void*) {
  const size_t n = 1000;
  std::vector<double> in(n * nranks), out(n * nranks, -1);
  for (size_t i = 0; i < in.size(); ++i) in[i] = rank + 1.0 + static_cast<double>(i % n);
  double scalar = rank + 1.0;
  mixcclRedOp_t op;
  RANK_CHECK(mixcclRedOpCreatePreMulSum(&op, &scalar, mixcclFloat64, mixcclScalarHostImmediate,
                                        comm) == mixcclSuccess);
  RANK_CHECK(op == static_cast<mixcclRedOp_t>(mixcclNumOps));
  scalar = 1000;  // read once at creation: later changes do not count
  RANK_CHECK(mixcclAllReduce(in.data(), out.data(), n, mixcclFloat64, op, comm, nullptr) ==
             mixcclSuccess);
  for (size_t i = 0; i < n; ++i) RANK_CHECK(out[i] == expectedSum(nranks, i));
  // Reduce to the last rank, in place, inside a group with a ReduceScatter.
  std::vector<double> inplace(in.begin(), in.begin() + n);
  std::vector<double> rs(n, -1);
  RANK_CHECK(mixcclGroupStart() == mixcclSuccess);
  RANK_CHECK(mixcclReduce(inplace.data(), inplace.data(), n, mixcclFloat64, op, nranks - 1, comm,
                          nullptr) == mixcclSuccess);
  RANK_CHECK(mixcclReduceScatter(in.data(), rs.data(), n, mixcclFloat64, op, comm, nullptr) ==
             mixcclSuccess);
  RANK_CHECK(mixcclGroupEnd() == mixcclSuccess);
  if (rank == nranks - 1)
    for (size_t i = 0; i < n; ++i) RANK_CHECK(inplace[i] == expectedSum(nranks, i));
  for (size_t i = 0; i < n; ++i) RANK_CHECK(rs[i] == expectedSum(nranks, i));
  // An in-memory scalar is read when each call runs.
  int32_t factor = 2;
  mixcclRedOp_t memOp;
  RANK_CHECK(mixcclRedOpCreatePreMulSum(&memOp, &factor, mixcclInt32, mixcclScalarDevice, comm) ==
             mixcclSuccess);
  RANK_CHECK(memOp != op);
  int32_t x = rank + 1, y = 0;
  factor = -3;
  RANK_CHECK(mixcclAllReduce(&x, &y, 1, mixcclInt32, memOp, comm, nullptr) == mixcclSuccess);
  RANK_CHECK(y == -3 * nranks * (nranks + 1) / 2);
  RANK_CHECK(mixcclRedOpDestroy(memOp, comm) == mixcclSuccess);
  RANK_CHECK(mixcclRedOpDestroy(op, comm) == mixcclSuccess);
  return 0;
}

TEST(PreMulSum, AllReduceReduceReduceScatterAndGroups) {
  EXPECT_EQ(runRanks(3, collectivesRank, nullptr, 60), 0);
}

bool failsWith(mixcclComm_t comm, mixcclResult_t got, mixcclResult_t want, const char* message) {
  if (got != want) {
    fprintf(stderr, "got %d, want %d\n", got, want);
    return false;
  }
  if (std::string(mixcclGetLastError(comm)) != message) {
    fprintf(stderr, "message: \"%s\"\n want: \"%s\"\n", mixcclGetLastError(comm), message);
    return false;
  }
  return true;
}

int refusalsRank(mixcclComm_t comm, int rank, int nranks, void*) {
  float s = 2, x = 1, y = 0;
  mixcclRedOp_t op;
  RANK_CHECK(failsWith(comm, mixcclRedOpCreatePreMulSum(nullptr, &s, mixcclFloat32,
                                                        mixcclScalarHostImmediate, comm),
                       mixcclInvalidArgument, "mixcclRedOpCreatePreMulSum: op is NULL"));
  RANK_CHECK(failsWith(comm, mixcclRedOpCreatePreMulSum(&op, nullptr, mixcclFloat32,
                                                        mixcclScalarHostImmediate, comm),
                       mixcclInvalidArgument, "mixcclRedOpCreatePreMulSum: scalar is NULL"));
  RANK_CHECK(failsWith(comm, mixcclRedOpCreatePreMulSum(&op, &s, (mixcclDataType_t)42,
                                                        mixcclScalarHostImmediate, comm),
                       mixcclInvalidArgument, "mixcclRedOpCreatePreMulSum: invalid datatype 42"));
  RANK_CHECK(failsWith(comm, mixcclRedOpCreatePreMulSum(&op, &s, mixcclFloat32,
                                                        (mixcclScalarResidence_t)7, comm),
                       mixcclInvalidArgument,
                       "mixcclRedOpCreatePreMulSum: invalid scalar residence 7"));
  RANK_CHECK(mixcclRedOpCreatePreMulSum(&op, &s, mixcclFloat32, mixcclScalarHostImmediate, comm) ==
             mixcclSuccess);
  double d = 1;
  RANK_CHECK(failsWith(comm, mixcclAllReduce(&d, &d, 1, mixcclFloat64, op, comm, nullptr),
                       mixcclInvalidArgument,
                       "mixcclAllReduce: op 5 was created for datatype float, the call is on "
                       "double"));
  RANK_CHECK(failsWith(comm, mixcclRedOpDestroy(mixcclMax, comm), mixcclInvalidArgument,
                       "mixcclRedOpDestroy: op 2 is a built-in op, not one created by "
                       "mixcclRedOpCreatePreMulSum"));
  RANK_CHECK(mixcclRedOpDestroy(op, comm) == mixcclSuccess);
  RANK_CHECK(failsWith(comm, mixcclRedOpDestroy(op, comm), mixcclInvalidArgument,
                       "mixcclRedOpDestroy: op 5 is not a live op of this communicator"));
  RANK_CHECK(failsWith(comm, mixcclAllReduce(&x, &y, 1, mixcclFloat32, op, comm, nullptr),
                       mixcclInvalidArgument, "mixcclAllReduce: invalid reduction op 5"));
  // The communicator is still usable.
  RANK_CHECK(mixcclAllReduce(&x, &y, 1, mixcclFloat32, mixcclSum, comm, nullptr) == mixcclSuccess);
  RANK_CHECK(y == nranks);
  return 0;
}

TEST(PreMulSum, RefusalsHaveExactMessages) { EXPECT_EQ(runRanks(2, refusalsRank, nullptr, 60), 0); }

}  // namespace
