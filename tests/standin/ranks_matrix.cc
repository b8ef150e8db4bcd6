#include "ranks_matrix.h"

#include <cstdio>
#include <cstring>
#include <vector>

#include "value_codec.h"

namespace ranks_test {
namespace {

bool isFp8(mixcclDataType_t t) { return t == mixcclFloat8e4m3 || t == mixcclFloat8e5m2; }

// A rank's input to a reduction. Partial results stay exact in every datatype whatever the
// order of the additions: fp8 sums stay <= 8, products <= 2, Avg's float sums are multiples
// of nranks that the type holds (so the quotient is exact) and integer Avg truncates like the
// library's.
double reductionInput(int op, mixcclDataType_t t, int rank, int nranks, size_t i) {
  switch (op) {
    case mixcclSum: return isFp8(t) ? (rank + i) % 2 : (3 * rank + i) % 11;
    case mixcclProd: return (rank + i) % 8 == 0 ? 2 : 1;
    case mixcclMax:
    case mixcclMin: {
      const int v = static_cast<int>((rank * 5 + i * 3) % 11);
      return isSignedType(t) ? v - 5 : v;
    }
    default:  // mixcclAvg
      // fp8 holds few multiples of nranks: one rank per element gives nranks or 2 nranks.
      if (isFp8(t)) return (rank + i) % nranks == 0 ? static_cast<double>(nranks * (1 + i % 2)) : 0;
      return isFloatType(t) ? static_cast<double>(nranks * ((rank + i) % 2)) : (3 * rank + i) % 11;
  }
}

double expectedReduction(int op, mixcclDataType_t t, int nranks, size_t i) {
  double acc = reductionInput(op, t, 0, nranks, i);
  for (int r = 1; r < nranks; ++r) {
    const double v = reductionInput(op, t, r, nranks, i);
    acc = op == mixcclProd ? acc * v : op == mixcclMax ? (v > acc ? v : acc)
        : op == mixcclMin ? (v < acc ? v : acc) : acc + v;
  }
  if (op == mixcclAvg) acc = isFloatType(t) ? acc / nranks : static_cast<double>(static_cast<long long>(acc) / nranks);
  return acc;
}

// Data of block `id` (a rank, or a (from, to) pair): ids below 113 differ at every element.
double blockValue(mixcclDataType_t t, int id, size_t i) {
  return distinctValue(t, static_cast<int>((id * 37 + i * 11) % 113));
}

const char* kOps[] = {"sum", "prod", "max", "min", "avg"};

class Matrix {
 public:
  Matrix(mixcclComm_t comm, RankBuffers& b, int rank, int n) : comm_(comm), b_(b), rank_(rank), n_(n) {}

  void reductions(mixcclDataType_t t, size_t count, bool inplace, int root) {
    for (int op = 0; op < mixcclNumOps; ++op) {
      std::vector<char> in = fill(t, count, [&](size_t i) { return reductionInput(op, t, rank_, n_, i); });
      std::vector<char> want = fill(t, count, [&](size_t i) { return expectedReduction(op, t, n_, i); });
      // AllReduce
      void* send = b_.alloc(in.size());
      void* recv = inplace ? send : b_.alloc(in.size());
      b_.write(send, in.data(), in.size());
      mixcclResult_t r = mixcclAllReduce(send, recv, count, t, static_cast<mixcclRedOp_t>(op), comm_, b_.stream());
      compare("AllReduce", t, op, count, inplace, -1, r, recv, want, 0);
      // Reduce: only the root's result is defined
      b_.write(send, in.data(), in.size());
      void* out = inplace ? send : (rank_ == root ? recv : nullptr);
      r = mixcclReduce(send, out, count, t, static_cast<mixcclRedOp_t>(op), root, comm_, b_.stream());
      if (rank_ == root) compare("Reduce", t, op, count, inplace, root, r, out, want, 0);
      else tally(r, 0, "Reduce", t, op, count, inplace, root);
      if (!inplace) b_.release(recv);
      b_.release(send);
      // ReduceScatter: rank r keeps block r of the reduced n * count elements
      std::vector<char> all = fill(t, count * n_, [&](size_t i) { return reductionInput(op, t, rank_, n_, i); });
      std::vector<char> mine = fill(t, count, [&](size_t i) { return expectedReduction(op, t, n_, rank_ * count + i); });
      send = b_.alloc(all.size());
      recv = inplace ? static_cast<char*>(send) + rank_ * count * typeSize(t) : b_.alloc(mine.size());
      b_.write(send, all.data(), all.size());
      r = mixcclReduceScatter(send, recv, count, t, static_cast<mixcclRedOp_t>(op), comm_, b_.stream());
      compare("ReduceScatter", t, op, count, inplace, -1, r, recv, mine, 0);
      if (!inplace) b_.release(recv);
      b_.release(send);
    }
  }

  void movements(mixcclDataType_t t, size_t count, bool inplace, int root) {
    const size_t es = typeSize(t), block = count * es;
    std::vector<char> gathered = blocks(t, count, [&](int p) { return p; });
    std::vector<char> mineData = fill(t, count, [&](size_t i) { return blockValue(t, rank_, i); });
    // AllGather, and Gather to root
    for (int gather = 0; gather < 2; ++gather) {
      const bool holds = !gather || rank_ == root;
      void* recv = holds ? b_.alloc(gathered.size()) : nullptr;
      void* send = (inplace && holds) ? static_cast<char*>(recv) + rank_ * block : b_.alloc(block);
      b_.write(send, mineData.data(), block);
      mixcclResult_t r = gather ? mixcclGather(send, recv, count, t, root, comm_, b_.stream())
                                : mixcclAllGather(send, recv, count, t, comm_, b_.stream());
      if (holds) compare(gather ? "Gather" : "AllGather", t, -1, count, inplace, root, r, recv, gathered, 0);
      else tally(r, 0, "Gather", t, -1, count, inplace, root);
      if (!(inplace && holds)) b_.release(send);
      b_.release(recv);
    }
    // Broadcast from root
    {
      std::vector<char> data = fill(t, count, [&](size_t i) { return blockValue(t, root, i); });
      void* recv = b_.alloc(block);
      void* send = inplace ? recv : b_.alloc(block);
      if (rank_ == root) b_.write(send, data.data(), block);
      mixcclResult_t r = mixcclBroadcast(send, recv, count, t, root, comm_, b_.stream());
      compare("Broadcast", t, -1, count, inplace, root, r, recv, data, 0);
      if (!inplace) b_.release(send);
      b_.release(recv);
    }
    // AlltoAll: block p of rank q's input is block (q, p); rank p receives it at block q
    {
      std::vector<char> out = blocks(t, count, [&](int p) { return rank_ * n_ + p; });
      std::vector<char> in = blocks(t, count, [&](int p) { return p * n_ + rank_; });
      void* send = b_.alloc(out.size());
      void* recv = inplace ? send : b_.alloc(in.size());
      b_.write(send, out.data(), out.size());
      mixcclResult_t r = mixcclAlltoAll(send, recv, count, t, comm_, b_.stream());
      compare("AlltoAll", t, -1, count, inplace, -1, r, recv, in, 0);
      if (!inplace) b_.release(recv);
      b_.release(send);
    }
    // Scatter from root: block p (id 64 + p, apart from the ranks' own ids) to rank p
    {
      std::vector<char> all = blocks(t, count, [&](int p) { return 64 + p; });
      std::vector<char> mine = fill(t, count, [&](size_t i) { return blockValue(t, 64 + rank_, i); });
      void* send = rank_ == root ? b_.alloc(all.size()) : nullptr;
      void* recv = (inplace && rank_ == root) ? static_cast<char*>(send) + rank_ * block : b_.alloc(block);
      if (send) b_.write(send, all.data(), all.size());
      mixcclResult_t r = mixcclScatter(send, recv, count, t, root, comm_, b_.stream());
      compare("Scatter", t, -1, count, inplace, root, r, recv, mine, 0);
      if (!(inplace && rank_ == root)) b_.release(recv);
      b_.release(send);
    }
  }

  // A ring of sends and receives plus a send to self, in one group.
  void sendRecv(mixcclDataType_t t, size_t count) {
    const int next = (rank_ + 1) % n_, prev = (rank_ + n_ - 1) % n_;
    const size_t bytes = count * typeSize(t);
    std::vector<char> mine = fill(t, count, [&](size_t i) { return blockValue(t, rank_, i); });
    std::vector<char> theirs = fill(t, count, [&](size_t i) { return blockValue(t, prev, i); });
    void* send = b_.alloc(bytes);
    void* recv = b_.alloc(bytes);
    void* self = b_.alloc(bytes);
    b_.write(send, mine.data(), bytes);
    mixcclResult_t r = mixcclGroupStart();
    if (r == mixcclSuccess) r = mixcclSend(send, count, t, next, comm_, b_.stream());
    if (r == mixcclSuccess) r = mixcclRecv(recv, count, t, prev, comm_, b_.stream());
    if (r == mixcclSuccess) r = mixcclSend(send, count, t, rank_, comm_, b_.stream());
    if (r == mixcclSuccess) r = mixcclRecv(self, count, t, rank_, comm_, b_.stream());
    mixcclResult_t end = mixcclGroupEnd();
    if (r == mixcclSuccess) r = end;
    compare("Send/Recv ring", t, -1, count, false, -1, r, recv, theirs, 0);
    compare("Send/Recv self", t, -1, count, false, -1, r, self, mine, 0);
    b_.release(send);
    b_.release(recv);
    b_.release(self);
  }

  MatrixTally tally() const { return tally_; }

 private:
  template <class Value>
  std::vector<char> fill(mixcclDataType_t t, size_t count, Value value) {
    std::vector<char> v(count * typeSize(t) + 1);
    for (size_t i = 0; i < count; ++i) storeValue(v.data(), i, t, value(i));
    v.pop_back();
    return v;
  }
  template <class Id>
  std::vector<char> blocks(mixcclDataType_t t, size_t count, Id id) {
    std::vector<char> v;
    for (int p = 0; p < n_; ++p) {
      std::vector<char> b = fill(t, count, [&](size_t i) { return blockValue(t, id(p), i); });
      v.insert(v.end(), b.begin(), b.end());
    }
    return v;
  }

  void compare(const char* coll, mixcclDataType_t t, int op, size_t count, bool inplace, int root,
               mixcclResult_t r, const void* result, const std::vector<char>& want, int) {
    std::vector<char> got(want.size());
    if (r == mixcclSuccess) b_.read(got.data(), result, got.size());
    size_t wrong = 0;
    const size_t es = typeSize(t);
    for (size_t i = 0; r == mixcclSuccess && i < want.size() / es; ++i)
      if (std::memcmp(got.data() + i * es, want.data() + i * es, es) != 0) {
        if (wrong == 0)
          std::fprintf(stderr, "rank %d: %s: element %zu is %g, expected %g\n", rank_, coll, i,
                       loadValue(got.data(), i, t), loadValue(want.data(), i, t));
        ++wrong;
      }
    tally(r, wrong, coll, t, op, count, inplace, root);
  }

  void tally(mixcclResult_t r, size_t wrong, const char* coll, mixcclDataType_t t, int op, size_t count,
             bool inplace, int root) {
    ++tally_.checks;
    if (r == mixcclSuccess && wrong == 0) return;
    ++tally_.failures;
    if (tally_.failures <= 20)
      std::fprintf(stderr, "rank %d: FAIL %s datatype %d op %s count %zu %s root %d: %s, %zu wrong%s%s\n", rank_,
                   coll, static_cast<int>(t), op >= 0 ? kOps[op] : "-", count, inplace ? "in-place" : "out-of-place",
                   root, mixcclGetErrorString(r), wrong, r == mixcclSuccess ? "" : ": ",
                   r == mixcclSuccess ? "" : mixcclGetLastError(comm_));
  }

  mixcclComm_t comm_;
  RankBuffers& b_;
  int rank_, n_;
  MatrixTally tally_;
};

}  // namespace

MatrixTally runMatrix(mixcclComm_t comm, RankBuffers& buffers, int rank, int nranks, bool quick,
                      bool sendRecv) {
  Matrix m(comm, buffers, rank, nranks);
  for (int ti = 0; ti < mixcclNumTypes; ++ti) {
    const auto t = static_cast<mixcclDataType_t>(ti);
    // 0, 1, a prime, and more than one 256 KiB chunk of the stand-in's slots for 8-byte types.
    const size_t counts[] = {0, 1, 1009, 40009};
    const int ncounts = quick ? 3 : 4;
    for (int k = 0; k < ncounts; ++k) {
      for (int inplace = 0; inplace < 2; ++inplace) {
        const int root = (k + ti + inplace) % nranks;
        m.reductions(t, counts[k], inplace, root);
        m.movements(t, counts[k], inplace, root);
      }
      if (sendRecv) m.sendRecv(t, counts[k]);
    }
  }
  return m.tally();
}

}  // namespace ranks_test
