#include "coll_checks.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "algo/float_formats.h"
#include "algo/reduce.h"

namespace adaptor_test {
namespace {

size_t sizeOf(mixcclDataType_t t) {
  switch (t) {
    case mixcclInt8: case mixcclUint8: case mixcclFloat8e4m3: case mixcclFloat8e5m2: return 1;
    case mixcclFloat16: case mixcclBfloat16: return 2;
    case mixcclInt32: case mixcclUint32: case mixcclFloat32: return 4;
    default: return 8;
  }
}

// Small integers are exact in every type used here, so results compare exactly.
void put(void* buf, size_t i, mixcclDataType_t t, double v) {
  char* p = static_cast<char*>(buf) + i * sizeOf(t);
  switch (t) {
    case mixcclInt8: { int8_t x = static_cast<int8_t>(v); std::memcpy(p, &x, 1); break; }
    case mixcclUint8: { uint8_t x = static_cast<uint8_t>(v); std::memcpy(p, &x, 1); break; }
    case mixcclInt32: { int32_t x = static_cast<int32_t>(v); std::memcpy(p, &x, 4); break; }
    case mixcclUint32: { uint32_t x = static_cast<uint32_t>(v); std::memcpy(p, &x, 4); break; }
    case mixcclInt64: { int64_t x = static_cast<int64_t>(v); std::memcpy(p, &x, 8); break; }
    case mixcclUint64: { uint64_t x = static_cast<uint64_t>(v); std::memcpy(p, &x, 8); break; }
    case mixcclFloat32: { float x = static_cast<float>(v); std::memcpy(p, &x, 4); break; }
    case mixcclFloat64: std::memcpy(p, &v, 8); break;
    case mixcclFloat16: { uint16_t x = mixccl::floatToHalf(static_cast<float>(v)); std::memcpy(p, &x, 2); break; }
    case mixcclBfloat16: { uint16_t x = mixccl::floatToBf16(static_cast<float>(v)); std::memcpy(p, &x, 2); break; }
    case mixcclFloat8e4m3: { uint8_t x = mixccl::floatToFp8e4m3(static_cast<float>(v)); std::memcpy(p, &x, 1); break; }
    case mixcclFloat8e5m2: { uint8_t x = mixccl::floatToFp8e5m2(static_cast<float>(v)); std::memcpy(p, &x, 1); break; }
    default: break;
  }
}

double get(const void* buf, size_t i, mixcclDataType_t t) {
  const char* p = static_cast<const char*>(buf) + i * sizeOf(t);
  switch (t) {
    case mixcclInt8: { int8_t x; std::memcpy(&x, p, 1); return x; }
    case mixcclUint8: { uint8_t x; std::memcpy(&x, p, 1); return x; }
    case mixcclInt32: { int32_t x; std::memcpy(&x, p, 4); return x; }
    case mixcclUint32: { uint32_t x; std::memcpy(&x, p, 4); return x; }
    case mixcclInt64: { int64_t x; std::memcpy(&x, p, 8); return static_cast<double>(x); }
    case mixcclUint64: { uint64_t x; std::memcpy(&x, p, 8); return static_cast<double>(x); }
    case mixcclFloat32: { float x; std::memcpy(&x, p, 4); return x; }
    case mixcclFloat64: { double x; std::memcpy(&x, p, 8); return x; }
    case mixcclFloat16: { uint16_t x; std::memcpy(&x, p, 2); return mixccl::halfToFloat(x); }
    case mixcclBfloat16: { uint16_t x; std::memcpy(&x, p, 2); return mixccl::bf16ToFloat(x); }
    case mixcclFloat8e4m3: { uint8_t x; std::memcpy(&x, p, 1); return mixccl::fp8e4m3ToFloat(x); }
    case mixcclFloat8e5m2: { uint8_t x; std::memcpy(&x, p, 1); return mixccl::fp8e5m2ToFloat(x); }
    default: return NAN;
  }
}

// Rank r's element i: 1, 2 or 3, so with 3 ranks sums stay <= 9 and products <= 27.
double value(int r, size_t i) { return static_cast<double>((r + i) % 3 + 1); }

double expected(mixcclRedOp_t op, int n, size_t i) {
  double acc = value(0, i);
  for (int r = 1; r < n; ++r) {
    double v = value(r, i);
    acc = op == mixcclSum ? acc + v : op == mixcclProd ? acc * v
          : op == mixcclMax ? std::max(acc, v) : std::min(acc, v);
  }
  return acc;
}

struct Checker {
  const mixccl::AdaptorTable* t;
  void* comm;
  int rank, n;
  bool expectWrongFirstElement;
  CheckTally tally;

  void fail(const std::string& what) {
    std::fprintf(stderr, "rank %d: FAILED %s\n", rank, what.c_str());
    ++tally.errors;
  }
  bool ok(mixcclResult_t rc, const std::string& what) {
    if (rc == mixcclSuccess) return true;
    fail(what + ": code " + std::to_string(rc) + ": " + t->lastError());
    return false;
  }
  // Compares count elements of buf against want(i); reports the first mismatch.
  template <class Want>
  void compare(const std::string& what, const void* buf, size_t count, mixcclDataType_t type,
               Want want) {
    ++tally.comparisons;
    for (size_t i = 0; i < count; ++i) {
      double got = get(buf, i, type), w = want(i) + ((expectWrongFirstElement && i == 0) ? 1 : 0);
      if (got != w) {
        std::fprintf(stderr, "rank %d: FAILED %s: element %zu is %s, expected %s\n", rank,
                     what.c_str(), i, std::to_string(got).c_str(), std::to_string(w).c_str());
        ++tally.mismatches;
        return;
      }
    }
  }
  std::vector<char> filled(mixcclDataType_t type, size_t count, size_t base) {
    std::vector<char> v(count * sizeOf(type) + 1);
    for (size_t i = 0; i < count; ++i) put(v.data(), i, type, value(rank, base + i));
    return v;
  }

  void reductions(mixcclDataType_t type, mixcclRedOp_t op, size_t count) {
    const std::string tag = std::string("type ") + mixccl::dataTypeName(type) + " op " +
                            mixccl::redOpName(op) + " count " + std::to_string(count);
    const size_t es = sizeOf(type);
    {  // allReduce, out of place then in place
      auto in = filled(type, count, 0);
      std::vector<char> out(count * es + 1);
      if (ok(t->allReduce(in.data(), out.data(), count, type, op, comm, nullptr), "allReduce " + tag))
        compare("allReduce " + tag, out.data(), count, type, [&](size_t i) { return expected(op, n, i); });
      if (ok(t->allReduce(in.data(), in.data(), count, type, op, comm, nullptr), "allReduce in place " + tag))
        compare("allReduce in place " + tag, in.data(), count, type, [&](size_t i) { return expected(op, n, i); });
    }
    {  // reduceScatter: block r of the reduced n*count elements
      auto in = filled(type, count * n, 0);
      std::vector<char> out(count * es + 1);
      if (ok(t->reduceScatter(in.data(), out.data(), count, type, op, comm, nullptr), "reduceScatter " + tag))
        compare("reduceScatter " + tag, out.data(), count, type,
                [&](size_t i) { return expected(op, n, rank * count + i); });
      // NCCL's in-place form: recvbuf is block r of sendbuf.
      char* mine = in.data() + rank * count * es;
      if (ok(t->reduceScatter(in.data(), mine, count, type, op, comm, nullptr), "reduceScatter in place " + tag))
        compare("reduceScatter in place " + tag, mine, count, type,
                [&](size_t i) { return expected(op, n, rank * count + i); });
    }
    {  // reduce to the last rank; other ranks' recvbuf must stay untouched
      const int root = n - 1;
      auto in = filled(type, count, 0);
      std::vector<char> out(count * es + 1, 0x5a), untouched = out;
      if (ok(t->reduce(in.data(), out.data(), count, type, op, root, comm, nullptr), "reduce " + tag)) {
        if (rank == root)
          compare("reduce " + tag, out.data(), count, type, [&](size_t i) { return expected(op, n, i); });
        else if (out != untouched)
          fail("reduce " + tag + ": a non-root rank's recvbuf was written");
        compare("reduce sendbuf unchanged " + tag, in.data(), count, type,
                [&](size_t i) { return value(rank, i); });
      }
    }
  }

  void movements(mixcclDataType_t type, size_t count) {
    const std::string tag = std::string("type ") + mixccl::dataTypeName(type) + " count " +
                            std::to_string(count);
    const size_t es = sizeOf(type);
    {  // allGather, out of place and in place
      auto in = filled(type, count, rank * count);
      std::vector<char> out(n * count * es + 1);
      if (ok(t->allGather(in.data(), out.data(), count, type, comm, nullptr), "allGather " + tag))
        compare("allGather " + tag, out.data(), n * count, type,
                [&](size_t i) { return value(static_cast<int>(i / count), i); });
      std::vector<char> all(n * count * es + 1);
      std::memcpy(all.data() + rank * count * es, in.data(), count * es);
      if (ok(t->allGather(all.data() + rank * count * es, all.data(), count, type, comm, nullptr),
             "allGather in place " + tag))
        compare("allGather in place " + tag, all.data(), n * count, type,
                [&](size_t i) { return value(static_cast<int>(i / count), i); });
    }
    {  // broadcast from rank 1 (or 0), out of place and in place
      const int root = n > 1 ? 1 : 0;
      auto in = filled(type, count, 0);
      std::vector<char> out(count * es + 1);
      if (ok(t->broadcast(in.data(), out.data(), count, type, root, comm, nullptr), "broadcast " + tag))
        compare("broadcast " + tag, out.data(), count, type, [&](size_t i) { return value(root, i); });
      if (ok(t->broadcast(in.data(), in.data(), count, type, root, comm, nullptr), "broadcast in place " + tag))
        compare("broadcast in place " + tag, in.data(), count, type, [&](size_t i) { return value(root, i); });
    }
    if (n > 1) {  // a group where every rank sends to both neighbours and receives from both
      const int right = (rank + 1) % n, left = (rank - 1 + n) % n;
      auto mine = filled(type, count, 0);
      std::vector<char> fromLeft(count * es + 1), fromRight(count * es + 1);
      bool posted = ok(t->groupStart(), "groupStart") &&
                    ok(t->send(mine.data(), count, type, right, comm, nullptr), "send right " + tag) &&
                    ok(t->send(mine.data(), count, type, left, comm, nullptr), "send left " + tag) &&
                    ok(t->recv(fromLeft.data(), count, type, left, comm, nullptr), "recv left " + tag) &&
                    ok(t->recv(fromRight.data(), count, type, right, comm, nullptr), "recv right " + tag);
      if (ok(t->groupEnd(), "groupEnd " + tag) && posted) {
        compare("group recv from left " + tag, fromLeft.data(), count, type,
                [&](size_t i) { return value(left, i); });
        compare("group recv from right " + tag, fromRight.data(), count, type,
                [&](size_t i) { return value(right, i); });
      }
      // Outside a group: rank 0 sends to rank 1, which receives (no cycle, so no deadlock).
      if (rank == 0) ok(t->send(mine.data(), count, type, 1, comm, nullptr), "plain send " + tag);
      if (rank == 1) {
        std::vector<char> got(count * es + 1);
        if (ok(t->recv(got.data(), count, type, 0, comm, nullptr), "plain recv " + tag))
          compare("plain recv " + tag, got.data(), count, type, [&](size_t i) { return value(0, i); });
      }
    }
  }
};

}  // namespace

void servicesReduce(void* dst, const void* a, const void* b, size_t count, mixcclDataType_t type,
                    mixcclRedOp_t op) {
  mixccl::reduce(dst, a, b, count, type, op);
}

CheckTally runCollectiveChecks(const mixccl::AdaptorTable* t, void* comm, int rank, int nranks,
                               bool expectWrongFirstElement) {
  Checker c{t, comm, rank, nranks, expectWrongFirstElement, {}};
  const mixcclRedOp_t ops[] = {mixcclSum, mixcclProd, mixcclMax, mixcclMin};
  const mixcclDataType_t exact[] = {mixcclFloat32, mixcclInt32, mixcclFloat16, mixcclBfloat16,
                                    mixcclInt8, mixcclUint64, mixcclFloat64};
  for (auto type : exact)
    for (auto op : ops) c.reductions(type, op, 1003);
  // fp8 has too few mantissa bits for exact sums and products of these values: max and min.
  for (auto type : {mixcclFloat8e4m3, mixcclFloat8e5m2})
    for (auto op : {mixcclMax, mixcclMin}) c.reductions(type, op, 517);
  // Large enough for several of Gloo's 1 MiB segments.
  c.reductions(mixcclFloat32, mixcclSum, 600000);
  for (auto type : {mixcclFloat32, mixcclInt8, mixcclFloat16, mixcclFloat64})
    c.movements(type, 1003);
  c.movements(mixcclFloat32, 300000);
  // Count 0 is a successful no-op.
  float dummy[4] = {0};
  c.ok(t->allReduce(dummy, dummy, 0, mixcclFloat32, mixcclSum, comm, nullptr), "allReduce count 0");
  c.ok(t->allGather(dummy, dummy, 0, mixcclFloat32, comm, nullptr), "allGather count 0");
  // Supported-ness as documented: avg is mixccl's, never the adaptor's.
  using mixccl::CollKind;
  if (!t->supports(CollKind::AllReduce, mixcclBfloat16, mixcclProd)) c.fail("supports(allreduce, bf16, prod) is 0");
  if (t->supports(CollKind::AllReduce, mixcclFloat32, mixcclAvg)) c.fail("supports(allreduce, float, avg) is 1");
  if (rank == 0 || expectWrongFirstElement)
    std::printf("rank %d: %d result comparisons, %d mismatch(es), %d other failure(s)\n", rank,
                c.tally.comparisons, c.tally.mismatches, c.tally.errors);
  return c.tally;
}

}  // namespace adaptor_test
