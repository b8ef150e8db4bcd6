#include "perf_data.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <vector>

#include "perf_types.h"

namespace mixperf {

namespace {

constexpr int64_t kValueCap = 100;  // keeps values small and readable in dumps

inline uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

inline uint64_t hashOf(uint64_t seed, int rank, size_t j) {
  return mix64(seed ^ mix64((static_cast<uint64_t>(rank) << 40) ^ static_cast<uint64_t>(j)));
}

inline bool holdsValue(const DataPlan& p, int rank, size_t j) {
  return static_cast<int>((static_cast<uint64_t>(rank) + j) % static_cast<uint64_t>(p.nranks)) <
         p.nnz;
}

inline int64_t boundedValue(uint64_t h, int64_t k, bool isSigned) {
  if (isSigned) return static_cast<int64_t>(h % static_cast<uint64_t>(2 * k + 1)) - k;
  return static_cast<int64_t>(h % static_cast<uint64_t>(k + 1));
}

// Encodings of the integers [-kTable, kTable] for the minifloat types, built on first use.
constexpr int64_t kTable = 4096;
struct MiniTable {
  std::once_flag once;
  std::vector<uint16_t> bits;
};
MiniTable g_tables[kNumTypes];

const std::vector<uint16_t>& miniTable(mixcclDataType_t t) {
  MiniTable& tb = g_tables[static_cast<int>(t)];
  std::call_once(tb.once, [&] {
    tb.bits.resize(2 * kTable + 1);
    for (int64_t v = -kTable; v <= kTable; ++v) {
      unsigned char buf[8] = {0};
      encodeValue(t, static_cast<double>(v), buf);
      uint16_t b = 0;
      std::memcpy(&b, buf, typeInfo(t).size);
      tb.bits[static_cast<size_t>(v + kTable)] = b;
    }
  });
  return tb.bits;
}

}  // namespace

void encodeInt(mixcclDataType_t t, int64_t v, void* out) {
  switch (t) {
    case mixcclInt8: { int8_t x = static_cast<int8_t>(v); std::memcpy(out, &x, 1); return; }
    case mixcclUint8: { uint8_t x = static_cast<uint8_t>(v); std::memcpy(out, &x, 1); return; }
    case mixcclInt32: { int32_t x = static_cast<int32_t>(v); std::memcpy(out, &x, 4); return; }
    case mixcclUint32: { uint32_t x = static_cast<uint32_t>(v); std::memcpy(out, &x, 4); return; }
    case mixcclInt64: std::memcpy(out, &v, 8); return;
    case mixcclUint64: { uint64_t x = static_cast<uint64_t>(v); std::memcpy(out, &x, 8); return; }
    case mixcclFloat32: { float x = static_cast<float>(v); std::memcpy(out, &x, 4); return; }
    case mixcclFloat64: { double x = static_cast<double>(v); std::memcpy(out, &x, 8); return; }
    default: break;
  }
  if (v >= -kTable && v <= kTable) {
    uint16_t b = miniTable(t)[static_cast<size_t>(v + kTable)];
    std::memcpy(out, &b, typeInfo(t).size);
    return;
  }
  encodeValue(t, static_cast<double>(v), out);
}

DataPlan makePlan(mixcclDataType_t type, mixcclRedOp_t op, bool reduction, int nranks,
                  uint64_t seed) {
  DataPlan p;
  p.type = type;
  p.op = op;
  p.reduction = reduction;
  p.nranks = nranks < 1 ? 1 : nranks;
  p.seed = seed;
  if (!reduction) return p;
  const int64_t m = maxExactInt(type);
  const int n = p.nranks;
  const bool isFloat = typeInfo(type).isFloat;
  switch (op) {
    case mixcclSum:
      p.nnz = static_cast<int>(std::min<int64_t>(n, m));
      p.k = std::min<int64_t>(m / p.nnz, kValueCap);
      break;
    case mixcclAvg:
      if (isFloat) {
        const int64_t units = m / n;  // multiples of n that fit in [0, m]
        if (units < 1) {
          p.zeros = true;
          p.nnz = 0;
          p.k = 0;
        } else {
          p.nnz = static_cast<int>(std::min<int64_t>(n, units));
          p.k = std::min<int64_t>(units / p.nnz, kValueCap);
          p.scale = n;
        }
      } else {
        p.nnz = static_cast<int>(std::min<int64_t>(n, m));
        p.k = std::min<int64_t>(m / p.nnz, kValueCap);
      }
      break;
    case mixcclProd:
      p.nnz = std::min(n, maxExactPow2(type));
      p.k = 1;
      break;
    case mixcclMax:
    case mixcclMin:
    default:
      p.nnz = n;
      p.k = std::min<int64_t>(m, kValueCap);
      break;
  }
  return p;
}

int64_t inputValue(const DataPlan& p, int rank, size_t j) {
  const bool isSigned = typeInfo(p.type).isSigned;
  const uint64_t h = hashOf(p.seed, rank, j);
  switch (p.op) {
    case mixcclProd: {
      if (j % 13 == 7 && static_cast<int>((j / 13) % static_cast<size_t>(p.nranks)) == rank) {
        return 0;
      }
      int64_t v = (holdsValue(p, rank, j) && (h & 1)) ? 2 : 1;
      if (isSigned && ((h >> 1) & 1)) v = -v;
      return v;
    }
    case mixcclMax:
    case mixcclMin:
      return boundedValue(h, p.k, isSigned);
    case mixcclSum:
    case mixcclAvg:
    default:
      if (p.zeros || !holdsValue(p, rank, j)) return 0;
      return boundedValue(h, p.k, isSigned) * p.scale;
  }
}

double reducedValue(const DataPlan& p, size_t j) {
  int64_t acc = inputValue(p, 0, j);
  for (int r = 1; r < p.nranks; ++r) {
    int64_t v = inputValue(p, r, j);
    switch (p.op) {
      case mixcclProd: acc *= v; break;
      case mixcclMax: acc = std::max(acc, v); break;
      case mixcclMin: acc = std::min(acc, v); break;
      case mixcclSum:
      case mixcclAvg:
      default: acc += v; break;
    }
  }
  if (p.op == mixcclAvg) {
    if (typeInfo(p.type).isFloat) return static_cast<double>(acc) / p.nranks;  // exact: multiple
    return static_cast<double>(acc / p.nranks);                                // truncates
  }
  return static_cast<double>(acc);
}

void fillInput(const DataPlan& p, int rank, size_t first, size_t count, void* out) {
  unsigned char* o = static_cast<unsigned char*>(out);
  const size_t es = typeInfo(p.type).size;
  if (!p.reduction) {
    for (size_t i = 0; i < count; ++i) {
      uint64_t h = hashOf(p.seed, rank, first + i);
      std::memcpy(o + i * es, &h, es);
    }
    return;
  }
  for (size_t i = 0; i < count; ++i) encodeInt(p.type, inputValue(p, rank, first + i), o + i * es);
}

void fillReduced(const DataPlan& p, size_t first, size_t count, void* out) {
  unsigned char* o = static_cast<unsigned char*>(out);
  const size_t es = typeInfo(p.type).size;
  const bool isFloatAvg = p.op == mixcclAvg && typeInfo(p.type).isFloat;
  for (size_t i = 0; i < count; ++i) {
    double v = reducedValue(p, first + i);
    // Integral results (all but float avg, whose result is integral too by construction) go
    // through the exact integer path; avoid -0 distinctions by comparing with elementsEqual.
    if (isFloatAvg || v != static_cast<double>(static_cast<int64_t>(v))) {
      encodeValue(p.type, v, o + i * es);
    } else {
      encodeInt(p.type, static_cast<int64_t>(v), o + i * es);
    }
  }
}

size_t countMismatches(mixcclDataType_t type, const void* got, const void* expected,
                       size_t count) {
  const size_t es = typeInfo(type).size;
  const unsigned char* g = static_cast<const unsigned char*>(got);
  const unsigned char* e = static_cast<const unsigned char*>(expected);
  if (!typeInfo(type).isFloat) {
    if (std::memcmp(g, e, count * es) == 0) return 0;
  }
  size_t wrong = 0;
  for (size_t i = 0; i < count; ++i) {
    if (!elementsEqual(type, g + i * es, e + i * es)) ++wrong;
  }
  return wrong;
}

size_t perRankCount(size_t count, size_t eltSize, int nranks) {
  size_t align = 16 / eltSize;  // elements per 16 bytes (eltSize is 1, 2, 4 or 8)
  return (count / static_cast<size_t>(nranks)) & ~(align - 1);
}

void poison(void* buf, size_t bytes) {
  unsigned char* b = static_cast<unsigned char*>(buf);
  for (size_t i = 0; i < bytes; ++i) b[i] = static_cast<unsigned char>(0xA5 ^ (i * 29));
}

}  // namespace mixperf
