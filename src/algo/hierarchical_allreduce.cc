// Cross-domain AllReduce (see hierarchical.h). Per piece of the buffer:
//   1. reduce-scatter inside the domain: this rank holds its domain's partial of its shard;
//   2. exchange: for every other domain, send that partial to the ranks owning overlapping
//      elements there and receive theirs (each element crosses between two domains once in
//      each direction);
//   3. combine the partials of all domains in domain order, then all-gather in the domain.
// Exchanges of kInFlight - 1 pieces stay posted while the next piece is reduce-scattered, so
// the link between domains never drains while a domain's ranks synchronise in their native
// steps (measured on a shaped link: docs/performance.md, "Across domains").
#include <cstring>
#include <numeric>
#include <vector>

#include "algo/hierarchical.h"
#include "algo/reduce.h"

namespace mixccl {
namespace {

// Sets of piece buffers: piece k's exchange is finished when piece k + kInFlight - 1 has been
// reduce-scattered and posted.
constexpr size_t kInFlight = 3;

struct PieceBuffers {
  std::vector<char> paddedIn;   // the piece padded to size * shard when it does not divide
  std::vector<char> shard;      // this domain's partial of the owned shard
  std::vector<std::vector<char>> foreign;  // other domains' partials, by domain index
  std::vector<char> total;      // the reduced shard, all-gathered
  std::vector<char> paddedOut;  // all-gather target when the piece does not divide
  std::vector<Transfer> ops;    // the exchange of this piece
};

class HierAllReduce {
 public:
  HierAllReduce(HierContext& h, const void* send, void* recv, size_t count,
                mixcclDataType_t type, mixcclRedOp_t op)
      : h_(h), in_(static_cast<const char*>(send)), out_(static_cast<char*>(recv)),
        count_(count), type_(type), op_(op), es_(dataTypeSize(type)),
        myDomain_(h.map.domainOf[h.rank]), n_(h.local.size()), me_(h.local.rank()) {}

  Result run() {
    if (count_ == 0) return mixcclSuccess;
    const size_t pieceElems = pieceElemsFor();
    const size_t pieces = (count_ + pieceElems - 1) / pieceElems;
    PieceBuffers slots[kInFlight];
    for (PieceBuffers& b : slots) b.foreign.resize(h_.map.domains.size());
    Result r = runPieces(slots, pieces, pieceElems);
    // Exchange ops still posted point into slots: let them end before the buffers go.
    if (r != mixcclSuccess) h_.cross.waitAll();
    return r;
  }

 private:
  Result runPieces(PieceBuffers* slots, size_t pieces, size_t pieceElems) {
    for (size_t k = 0; k < pieces + kInFlight - 1; ++k) {
      if (k < pieces) {
        size_t off = k * pieceElems, len = std::min(pieceElems, count_ - off);
        MIXCCL_CHECK(reduceScatterPiece(slots[k % kInFlight], off, len));
        postExchange(slots[k % kInFlight], len);
      }
      if (k >= kInFlight - 1 && k - (kInFlight - 1) < pieces) {
        size_t j = k - (kInFlight - 1);
        size_t off = j * pieceElems, len = std::min(pieceElems, count_ - off);
        MIXCCL_CHECK(finishPiece(slots[j % kInFlight], off, len));
      }
    }
    return mixcclSuccess;
  }

  // A multiple of every domain's size (so pieces divide evenly and need no padding) close to
  // pieceBytes; only the last piece may need padding.
  size_t pieceElemsFor() const {
    size_t l = 1;
    for (const Domain& d : h_.map.domains) {
      l = std::lcm(l, d.ranks.size());
      if (l > (1u << 20)) { l = 1; break; }  // absurd lcm: accept padding instead
    }
    size_t want = std::max<size_t>(l, h_.pieceBytes / es_);
    return want / l * l;
  }

  mixcclRedOp_t nativeOp() const { return op_ == mixcclAvg ? mixcclSum : op_; }

  Result reduceScatterPiece(PieceBuffers& b, size_t off, size_t len) {
    const size_t s = shardElems(len, n_);
    const char* src = in_ + off * es_;
    if (s * n_ != len) {
      b.paddedIn.assign(s * n_ * es_, 0);
      memcpy(b.paddedIn.data(), src, len * es_);
      src = b.paddedIn.data();
    }
    b.shard.resize(s * es_);
    return h_.local.reduceScatter(src, b.shard.data(), s, type_, nativeOp());
  }

  void postExchange(PieceBuffers& b, size_t len) {
    b.ops.clear();
    OwnedRange mine = ownedRange(len, n_, me_);
    if (mine.size() == 0) return;
    for (size_t e = 0; e < h_.map.domains.size(); ++e) {
      if ((int)e == myDomain_) continue;
      const std::vector<int>& ranks = h_.map.domains[e].ranks;
      b.foreign[e].resize(mine.size() * es_);
      for (size_t j = 0; j < ranks.size(); ++j) {
        OwnedRange theirs = ownedRange(len, (int)ranks.size(), (int)j);
        size_t lo = std::max(mine.begin, theirs.begin), hi = std::min(mine.end, theirs.end);
        if (lo >= hi) continue;
        size_t at = (lo - mine.begin) * es_, bytes = (hi - lo) * es_;
        b.ops.push_back(h_.cross.send(ranks[j], b.shard.data() + at, bytes));
        b.ops.push_back(h_.cross.recv(ranks[j], b.foreign[e].data() + at, bytes));
      }
    }
  }

  Result finishPiece(PieceBuffers& b, size_t off, size_t len) {
    for (Transfer op : b.ops) MIXCCL_CHECK(h_.cross.wait(op));
    const size_t s = shardElems(len, n_);
    OwnedRange mine = ownedRange(len, n_, me_);
    b.total.resize(s * es_);
    // Domain order, identical on every owner of these elements, so all get the same bits.
    for (size_t e = 0; e < h_.map.domains.size(); ++e) {
      const char* part = (int)e == myDomain_ ? b.shard.data() : b.foreign[e].data();
      if (mine.size() == 0) break;
      if (e == 0) memcpy(b.total.data(), part, mine.size() * es_);
      else reduce(b.total.data(), b.total.data(), part, mine.size(), type_, nativeOp());
    }
    if (op_ == mixcclAvg) divideBy(b.total.data(), mine.size(), type_, (int)h_.map.domainOf.size());
    char* dst = out_ + off * es_;
    if (s * n_ == len) return h_.local.allGather(b.total.data(), dst, s, type_);
    b.paddedOut.resize(s * n_ * es_);
    MIXCCL_CHECK(h_.local.allGather(b.total.data(), b.paddedOut.data(), s, type_));
    memcpy(dst, b.paddedOut.data(), len * es_);
    return mixcclSuccess;
  }

  HierContext& h_;
  const char* in_;
  char* out_;
  size_t count_;
  mixcclDataType_t type_;
  mixcclRedOp_t op_;
  size_t es_;
  int myDomain_, n_, me_;
};

}  // namespace

Result hierarchicalAllReduce(HierContext& h, const void* sendbuf, void* recvbuf, size_t count,
                             mixcclDataType_t type, mixcclRedOp_t op) {
  return HierAllReduce(h, sendbuf, recvbuf, count, type, op).run();
}

}  // namespace mixccl
