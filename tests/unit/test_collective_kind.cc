// The one table of collective kinds (base/collective_kind.h) and what is derived from it: byte
// counts per rank, the mismatch descriptor and its description.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "base/collective_kind.h"
#include "core/coll_call.h"

namespace mixccl {
namespace {

CollCall callOf(CollKind kind, size_t count, mixcclDataType_t type, int root) {
  return CollCall{kind, nullptr, nullptr, count, type, mixcclMax, root, nullptr};
}

struct Bytes {
  size_t send, recv;
};
Bytes bytesOn(const CollCall& call, int rank, int nranks) {
  Bytes b{~size_t(0), ~size_t(0)};
  callBytes(call, rank, nranks, &b.send, &b.recv);
  return b;
}

TEST(CollKindTable, EveryKindHasItsOwnRowAndNames) {
  const char* api[] = {"mixcclAllReduce", "mixcclBroadcast", "mixcclReduce",
                       "mixcclAllGather", "mixcclReduceScatter", "mixcclAlltoAll",
                       "mixcclGather", "mixcclScatter"};
  const char* names[] = {"allreduce", "broadcast", "reduce", "allgather",
                         "reducescatter", "alltoall", "gather", "scatter"};
  for (int k = 0; k < kNumCollKinds; ++k) {
    const CollKindSpec& s = collSpec((CollKind)k);
    EXPECT_EQ((int)s.kind, k);
    EXPECT_STREQ(s.apiName, api[k]);
    EXPECT_STREQ(s.name, names[k]);
  }
}

TEST(CollKindTable, WhichKindsReduceHaveARootOrArePairwise) {
  std::string reduces, rooted, pairwise;
  for (int k = 0; k < kNumCollKinds; ++k) {
    const CollKindSpec& s = collSpec((CollKind)k);
    if (s.reduces) reduces += std::string(s.name) + " ";
    if (s.rooted) rooted += std::string(s.name) + " ";
    if (s.pairwise) pairwise += std::string(s.name) + " ";
  }
  EXPECT_EQ(reduces, "allreduce reduce reducescatter ");
  EXPECT_EQ(rooted, "broadcast reduce gather scatter ");
  EXPECT_EQ(pairwise, "alltoall gather scatter ");
}

// Per kind, 4 ranks, count 3 of float32 (12 bytes a block), root 2: what a rank that is the
// root and one that is not hold, as NCCL defines the calls.
TEST(CollKindTable, BufferBytesOnRootAndOtherRanks) {
  struct Row {
    CollKind kind;
    Bytes root, other;
  } rows[] = {
      {CollKind::AllReduce, {12, 12}, {12, 12}},
      {CollKind::Broadcast, {12, 12}, {0, 12}},
      {CollKind::Reduce, {12, 12}, {12, 0}},
      {CollKind::AllGather, {12, 48}, {12, 48}},
      {CollKind::ReduceScatter, {48, 12}, {48, 12}},
      {CollKind::AlltoAll, {48, 48}, {48, 48}},
      {CollKind::Gather, {12, 48}, {12, 0}},
      {CollKind::Scatter, {48, 12}, {0, 12}},
  };
  for (const Row& r : rows) {
    const CollCall call = callOf(r.kind, 3, mixcclFloat32, 2);
    const char* name = collSpec(r.kind).name;
    Bytes root = bytesOn(call, 2, 4), other = bytesOn(call, 1, 4);
    EXPECT_EQ(root.send, r.root.send) << name;
    EXPECT_EQ(root.recv, r.root.recv) << name;
    EXPECT_EQ(other.send, r.other.send) << name;
    EXPECT_EQ(other.recv, r.other.recv) << name;
  }
}

TEST(CollKindTable, KindsFromOtherRanksAreRangeChecked) {
  CollKind k = CollKind::AllReduce;
  EXPECT_TRUE(collKindFromInt(7, &k));
  EXPECT_EQ(k, CollKind::Scatter);
  EXPECT_FALSE(collKindFromInt(8, &k));
  EXPECT_FALSE(collKindFromInt(-1, &k));
  EXPECT_EQ(k, CollKind::Scatter);  // untouched when refused
}

TEST(CollDescription, OpOnlyForReductionsRootOnlyForRootedKinds) {
  CollDesc ar = collDescOf(CollCall{CollKind::AllReduce, nullptr, nullptr, 12, mixcclFloat32,
                                    mixcclSum, -1, nullptr});
  EXPECT_EQ(ar.kind, 0);
  EXPECT_EQ(ar.op, (int)mixcclSum);
  EXPECT_EQ(ar.root, -1);
  EXPECT_EQ(describeCollDesc(ar), "mixcclAllReduce (count 12, datatype float, op sum)");
  // A gather carries no op whatever the op field holds; its root is part of the call.
  CollDesc g = collDescOf(callOf(CollKind::Gather, 5, mixcclInt8, 3));
  EXPECT_EQ(g.op, -1);
  EXPECT_EQ(g.root, 3);
  EXPECT_EQ(describeCollDesc(g), "mixcclGather (count 5, datatype int8, root 3)");
  CollDesc bad;
  bad.kind = 42;
  bad.datatype = 99;
  bad.count = 1;
  EXPECT_EQ(describeCollDesc(bad), "an unknown collective 42 (count 1, datatype 99)");
}

}  // namespace
}  // namespace mixccl
