// Unit tests of the perf tools' arguments, codecs, data generator and output (no library needed).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "perf_args.h"
#include "perf_data.h"
#include "perf_memory_budget.h"
#include "perf_output.h"
#include "perf_types.h"

using namespace mixperf;

namespace {

ParseResult parse(std::vector<std::string> v, PerfArgs* a, std::string* err) {
  v.insert(v.begin(), "prog");
  std::vector<const char*> argv;
  for (auto& s : v) argv.push_back(s.c_str());
  return parseArgs(static_cast<int>(argv.size()), argv.data(), a, err);
}

// ------------------------------------------------------------------------------------------
// Arguments

TEST(PerfArgs, ParseSize) {
  size_t v = 0;
  EXPECT_TRUE(parseSize("8", &v));
  EXPECT_EQ(v, 8u);
  EXPECT_TRUE(parseSize("1K", &v));
  EXPECT_EQ(v, 1024u);
  EXPECT_TRUE(parseSize("16M", &v));
  EXPECT_EQ(v, 16u << 20);
  EXPECT_TRUE(parseSize("2g", &v));
  EXPECT_EQ(v, size_t(2) << 30);
  EXPECT_TRUE(parseSize("1KB", &v));
  EXPECT_EQ(v, 1024u);
  EXPECT_TRUE(parseSize("0", &v));
  EXPECT_EQ(v, 0u);
  for (const char* bad : {"", "K", "1.5M", "-1", "12X", "M1", "99999999999999999999"}) {
    EXPECT_FALSE(parseSize(bad, &v)) << bad;
  }
}

TEST(PerfArgs, DefaultsMatchNcclTests) {
  PerfArgs a;
  std::string err;
  ASSERT_EQ(parse({}, &a, &err), ParseResult::kOk);
  EXPECT_EQ(a.minBytes, 32u << 20);
  EXPECT_EQ(a.maxBytes, 32u << 20);
  EXPECT_EQ(a.iters, 20);
  EXPECT_EQ(a.check, 1);
  EXPECT_EQ(a.average, 1);
  EXPECT_EQ(a.types, std::vector<mixcclDataType_t>{mixcclFloat32});
  EXPECT_EQ(a.ops, std::vector<mixcclRedOp_t>{mixcclSum});
  EXPECT_EQ(a.root, 0);
}

TEST(PerfArgs, AllFlags) {
  PerfArgs a;
  std::string err;
  ASSERT_EQ(parse({"-b", "8", "-e128M", "-f", "2", "-n", "5", "-w", "3", "-c", "2", "-o", "all",
                   "-d", "all", "-r", "all", "-a", "3", "-m", "4", "-N", "2", "-T", "30", "-J",
                   "out.json", "-g", "1", "-t", "1"},
                  &a, &err),
            ParseResult::kOk)
      << err;
  EXPECT_EQ(a.minBytes, 8u);
  EXPECT_EQ(a.maxBytes, 128u << 20);
  EXPECT_EQ(a.stepFactor, 2u);
  EXPECT_EQ(a.iters, 5);
  EXPECT_EQ(a.warmupIters, 3);
  EXPECT_EQ(a.check, 2);
  EXPECT_EQ(a.ops.size(), 5u);
  EXPECT_EQ(a.types.size(), 12u);
  EXPECT_TRUE(a.allRoots);
  EXPECT_EQ(a.average, 3);
  EXPECT_EQ(a.aggIters, 4);
  EXPECT_EQ(a.cycles, 2);
  EXPECT_EQ(a.timeoutSec, 30);
  EXPECT_EQ(a.jsonPath, "out.json");
}

TEST(PerfArgs, LongOptionsAndLists) {
  PerfArgs a;
  std::string err;
  ASSERT_EQ(parse({"--minbytes=1K", "--maxbytes", "4K", "--stepbytes=1K", "--datatype",
                   "half,bfloat16,f8e4m3,f8e5m2", "--op=prod,avg", "--root", "2", "--check", "0"},
                  &a, &err),
            ParseResult::kOk)
      << err;
  EXPECT_EQ(a.minBytes, 1024u);
  EXPECT_EQ(a.maxBytes, 4096u);
  EXPECT_EQ(a.stepBytes, 1024u);
  EXPECT_EQ(a.types, (std::vector<mixcclDataType_t>{mixcclFloat16, mixcclBfloat16,
                                                    mixcclFloat8e4m3, mixcclFloat8e5m2}));
  EXPECT_EQ(a.ops, (std::vector<mixcclRedOp_t>{mixcclProd, mixcclAvg}));
  EXPECT_EQ(a.root, 2);
  EXPECT_FALSE(a.allRoots);
  EXPECT_EQ(a.check, 0);
}

TEST(PerfArgs, Errors) {
  const std::vector<std::vector<std::string>> bad = {
      {"-q", "1"},         {"--nosuch=1"},     {"-b"},          {"-b", "x"},
      {"-i", "1K", "-f", "2"}, {"-b", "2K", "-e", "1K"}, {"-d", "float128"}, {"-o", "xor"},
      {"-a", "4"},         {"-g", "2"},        {"-t", "8"},     {"-n", "0"},
      {"stray"},           {"-r", "-1"},       {"-d", ""},      {"-m", "0"}};
  for (const auto& v : bad) {
    PerfArgs a;
    std::string err;
    EXPECT_EQ(parse(v, &a, &err), ParseResult::kError) << v[0];
    EXPECT_FALSE(err.empty());
  }
  PerfArgs a;
  std::string err;
  EXPECT_EQ(parse({"-h"}, &a, &err), ParseResult::kHelp);
  EXPECT_NE(usage("x").find("--inject_error"), std::string::npos);
}

TEST(PerfArgs, MemoryMode) {
  PerfArgs a;
  std::string err;
  EXPECT_EQ(a.memory, PerfArgs::Memory::kAuto);  // the memory of the rank's adaptor
  ASSERT_EQ(parse({"-M", "host"}, &a, &err), ParseResult::kOk);
  EXPECT_EQ(a.memory, PerfArgs::Memory::kHost);
  ASSERT_EQ(parse({"-M", "device"}, &a, &err), ParseResult::kOk);
  EXPECT_EQ(a.memory, PerfArgs::Memory::kDevice);
  ASSERT_EQ(parse({"--memory=auto"}, &a, &err), ParseResult::kOk);
  EXPECT_EQ(a.memory, PerfArgs::Memory::kAuto);
  EXPECT_EQ(parse({"-M", "gpu"}, &a, &err), ParseResult::kError);
  EXPECT_EQ(err, "invalid memory (auto, device or host) 'gpu' for option '-M'");
}

// A sweep too large for the host is refused with what it needs, before anything is allocated.
TEST(PerfMemoryBudget, Shortfall) {
  const size_t G = size_t(1) << 30;
  EXPECT_EQ(memoryShortfall(16 * G, 16 * G + 64, 3, 4, 12 * G),
            "-e 16G needs 48.0 GiB of host memory per rank (3 buffers of 16.0 GiB); 4 rank(s) on "
            "this host need 192.0 GiB but 12.0 GiB is available; lower -e (maxbytes)");
  EXPECT_EQ(memoryShortfall(size_t(1) << 20, (size_t(1) << 20) + 64, 3, 8, 12 * G), "");
  EXPECT_EQ(memoryShortfall(16 * G, 16 * G, 3, 4, 0), "");  // unknown: not refused
  EXPECT_GT(availableHostMemory(), size_t(0));
}

TEST(PerfArgs, SizeSweep) {
  PerfArgs a;
  a.minBytes = 8;
  a.maxBytes = 64;
  a.stepFactor = 2;
  EXPECT_EQ(sizeSweep(a), (std::vector<size_t>{8, 16, 32, 64}));
  a.minBytes = 0;
  a.maxBytes = 4;
  EXPECT_EQ(sizeSweep(a), (std::vector<size_t>{0, 1, 2, 4}));
  a.stepFactor = 1;
  a.minBytes = 0;
  a.maxBytes = 1100;
  a.stepBytes = 275;
  EXPECT_EQ(sizeSweep(a), (std::vector<size_t>{0, 275, 550, 825, 1100}));
  a.minBytes = a.maxBytes = 1 << 20;
  EXPECT_EQ(sizeSweep(a), (std::vector<size_t>{1 << 20}));
}

TEST(PerfArgs, PerRankCountRoundsLikeNcclTests) {
  EXPECT_EQ(perRankCount(1000, 4, 3), 332u);  // 333 rounded down to a multiple of 4 elements
  EXPECT_EQ(perRankCount(1000, 1, 3), 320u);  // multiple of 16 bytes
  EXPECT_EQ(perRankCount(1000, 8, 3), 332u);
  EXPECT_EQ(perRankCount(2, 4, 4), 0u);
  EXPECT_EQ(perRankCount(0, 2, 2), 0u);
  EXPECT_EQ(perRankCount(1 << 20, 4, 2), size_t(1) << 19);
}

// ------------------------------------------------------------------------------------------
// Types and codecs

TEST(PerfTypes, NamesRoundTrip) {
  for (int t = 0; t < kNumTypes; ++t) {
    mixcclDataType_t parsed;
    ASSERT_TRUE(parseTypeName(typeInfo(static_cast<mixcclDataType_t>(t)).name, &parsed));
    EXPECT_EQ(parsed, t);
  }
  for (int o = 0; o < kNumOps; ++o) {
    mixcclRedOp_t parsed;
    ASSERT_TRUE(parseOpName(opInfo(static_cast<mixcclRedOp_t>(o)).name, &parsed));
    EXPECT_EQ(parsed, o);
  }
}

TEST(PerfTypes, KnownEncodings) {
  EXPECT_EQ(encodeMinifloat(1.0, 5, 10, false), 0x3C00u);
  EXPECT_EQ(encodeMinifloat(-2.0, 5, 10, false), 0xC000u);
  EXPECT_EQ(encodeMinifloat(65504.0, 5, 10, false), 0x7BFFu);
  EXPECT_EQ(encodeMinifloat(1e6, 5, 10, false), 0x7C00u);  // overflow to infinity
  EXPECT_EQ(encodeMinifloat(1.0, 8, 7, false), 0x3F80u);
  EXPECT_EQ(encodeMinifloat(1.0, 4, 3, true), 0x38u);
  EXPECT_EQ(encodeMinifloat(448.0, 4, 3, true), 0x7Eu);
  EXPECT_EQ(encodeMinifloat(-448.0, 4, 3, true), 0xFEu);
  EXPECT_EQ(encodeMinifloat(1.0, 5, 2, false), 0x3Cu);
  EXPECT_EQ(encodeMinifloat(57344.0, 5, 2, false), 0x7Bu);
  EXPECT_EQ(encodeMinifloat(std::ldexp(1.0, -9), 4, 3, true), 0x01u);  // smallest subnormal
  // Round to nearest even.
  EXPECT_EQ(decodeMinifloat(encodeMinifloat(2049.0, 5, 10, false), 5, 10, false), 2048.0);
  EXPECT_EQ(decodeMinifloat(encodeMinifloat(2051.0, 5, 10, false), 5, 10, false), 2052.0);
  EXPECT_EQ(decodeMinifloat(encodeMinifloat(9.0, 5, 2, false), 5, 2, false), 8.0);
  EXPECT_EQ(decodeMinifloat(encodeMinifloat(11.0, 5, 2, false), 5, 2, false), 12.0);
}

void roundTripAll(int ebits, int mbits, bool fn) {
  const uint32_t n = 1u << (1 + ebits + mbits);
  for (uint32_t b = 0; b < n; ++b) {
    double v = decodeMinifloat(b, ebits, mbits, fn);
    if (std::isnan(v)) continue;
    ASSERT_EQ(encodeMinifloat(v, ebits, mbits, fn), b) << "bits " << b << " value " << v;
  }
}

TEST(PerfTypes, ExhaustiveRoundTrip) {
  roundTripAll(4, 3, true);    // f8e4m3
  roundTripAll(5, 2, false);   // f8e5m2
  roundTripAll(5, 10, false);  // half
  roundTripAll(8, 7, false);   // bfloat16
}

TEST(PerfTypes, MaxExactIntIsTight) {
  for (int ti = 0; ti < kNumTypes; ++ti) {
    auto t = static_cast<mixcclDataType_t>(ti);
    const int64_t m = maxExactInt(t);
    const bool sgn = typeInfo(t).isSigned;
    const int64_t limit = std::min<int64_t>(m, 5000);
    for (int64_t v = sgn ? -limit : 0; v <= limit; ++v) {
      unsigned char buf[8];
      encodeValue(t, static_cast<double>(v), buf);
      ASSERT_EQ(decodeValue(t, buf), static_cast<double>(v)) << typeInfo(t).name << " " << v;
      unsigned char fast[8];
      encodeInt(t, v, fast);
      ASSERT_EQ(std::memcmp(buf, fast, typeInfo(t).size), 0) << typeInfo(t).name << " " << v;
    }
    if (typeInfo(t).isFloat && m < 5000) {
      unsigned char buf[8];
      encodeValue(t, static_cast<double>(m + 1), buf);
      EXPECT_NE(decodeValue(t, buf), static_cast<double>(m + 1)) << typeInfo(t).name;
    }
    const int p = maxExactPow2(t);
    unsigned char buf[8];
    encodeValue(t, std::ldexp(1.0, p), buf);
    EXPECT_EQ(decodeValue(t, buf), std::ldexp(1.0, p)) << typeInfo(t).name;
    if (sgn) {
      encodeValue(t, -std::ldexp(1.0, p), buf);
      EXPECT_EQ(decodeValue(t, buf), -std::ldexp(1.0, p)) << typeInfo(t).name;
    }
  }
}

TEST(PerfTypes, ElementsEqual) {
  float pz = 0.0f, nz = -0.0f, one = 1.0f;
  EXPECT_TRUE(elementsEqual(mixcclFloat32, &pz, &nz));
  EXPECT_FALSE(elementsEqual(mixcclFloat32, &pz, &one));
  uint8_t a = 0x00, b = 0x80;  // fp8 +0 / -0, but int8 0 / -128
  EXPECT_TRUE(elementsEqual(mixcclFloat8e4m3, &a, &b));
  EXPECT_FALSE(elementsEqual(mixcclInt8, &a, &b));
  uint16_t h0 = 0x0000, h1 = 0x8000, h2 = 0x0001;
  EXPECT_TRUE(elementsEqual(mixcclFloat16, &h0, &h1));
  EXPECT_FALSE(elementsEqual(mixcclFloat16, &h0, &h2));
}

// ------------------------------------------------------------------------------------------
// Data: every reduction order, in the wire type, gives exactly the expected value.

// One reduction step the way a library does it for low-precision types: decode both operands to
// float32, reduce, round once to the wire type.
void stepInType(mixcclDataType_t t, mixcclRedOp_t op, unsigned char* acc, const unsigned char* in) {
  const TypeInfo& ti = typeInfo(t);
  if (!ti.isFloat) {
    int64_t x = static_cast<int64_t>(decodeValue(t, acc)), y = static_cast<int64_t>(decodeValue(t, in));
    int64_t r = op == mixcclProd ? x * y : op == mixcclMax ? std::max(x, y)
              : op == mixcclMin ? std::min(x, y) : x + y;
    encodeInt(t, r, acc);
    return;
  }
  float x = static_cast<float>(decodeValue(t, acc)), y = static_cast<float>(decodeValue(t, in));
  float r = op == mixcclProd ? x * y : op == mixcclMax ? std::max(x, y)
          : op == mixcclMin ? std::min(x, y) : x + y;
  encodeValue(t, r, acc);
}

TEST(PerfData, EveryReductionOrderIsExact) {
  std::mt19937 rng(12345);
  const size_t count = 600;
  for (int ti = 0; ti < kNumTypes; ++ti) {
    auto t = static_cast<mixcclDataType_t>(ti);
    const size_t es = typeInfo(t).size;
    for (int oi = 0; oi < kNumOps; ++oi) {
      auto op = static_cast<mixcclRedOp_t>(oi);
      for (int n : {1, 2, 3, 4, 5, 8, 9, 17}) {
        DataPlan p = makePlan(t, op, true, n, 1000 + n);
        std::vector<std::vector<unsigned char>> in(n, std::vector<unsigned char>(count * es));
        for (int r = 0; r < n; ++r) fillInput(p, r, 0, count, in[r].data());
        std::vector<unsigned char> expected(count * es);
        fillReduced(p, 0, count, expected.data());
        std::vector<int> order(n);
        std::iota(order.begin(), order.end(), 0);
        const bool floatAvg = op == mixcclAvg && typeInfo(t).isFloat;
        for (int trial = 0; trial < 3; ++trial) {
          std::shuffle(order.begin(), order.end(), rng);
          std::vector<unsigned char> acc(count * es), tmp(es);
          for (size_t i = 0; i < count; ++i) {
            unsigned char* a = &acc[i * es];
            for (int k = 0; k < n; ++k) {
              const unsigned char* v = &in[order[k]][i * es];
              if (floatAvg && trial == 2) {  // pre-multiply by 1/n, then sum
                encodeValue(t, static_cast<float>(decodeValue(t, v)) * (1.0f / n), tmp.data());
                v = tmp.data();
              }
              if (k == 0) {
                std::memcpy(a, v, es);
              } else {
                stepInType(t, op, a, v);
              }
            }
            if (op == mixcclAvg && !(floatAvg && trial == 2)) {
              if (typeInfo(t).isFloat) {
                encodeValue(t, static_cast<float>(decodeValue(t, a)) / n, a);
              } else {
                encodeInt(t, static_cast<int64_t>(decodeValue(t, a)) / n, a);
              }
            }
          }
          ASSERT_EQ(countMismatches(t, acc.data(), expected.data(), count), 0u)
              << typeInfo(t).name << " " << opInfo(op).name << " n=" << n << " trial " << trial;
        }
      }
    }
  }
}

TEST(PerfData, InputsAreNotTrivial) {
  // The check would prove little if the data were constant: require variety, and that a missing
  // contribution changes the result of a sum.
  for (int ti = 0; ti < kNumTypes; ++ti) {
    auto t = static_cast<mixcclDataType_t>(ti);
    const size_t es = typeInfo(t).size, count = 512;
    for (int n : {2, 3}) {
      DataPlan p = makePlan(t, mixcclSum, true, n, 77);
      std::vector<unsigned char> a(count * es), full(count * es), partial(count * es);
      fillInput(p, 0, 0, count, a.data());
      std::vector<double> distinct;
      for (size_t i = 0; i < count; ++i) distinct.push_back(decodeValue(t, &a[i * es]));
      std::sort(distinct.begin(), distinct.end());
      EXPECT_GT(std::unique(distinct.begin(), distinct.end()) - distinct.begin(), 2)
          << typeInfo(t).name;
      fillReduced(p, 0, count, full.data());
      // "Reduce" without rank n-1: plan for n-1 ranks has other values, so build it by hand.
      for (size_t i = 0; i < count; ++i) {
        int64_t s = 0;
        for (int r = 0; r < n - 1; ++r) s += inputValue(p, r, i);
        encodeInt(t, s, &partial[i * es]);
      }
      EXPECT_GT(countMismatches(t, partial.data(), full.data(), count), count / 8)
          << typeInfo(t).name << " n=" << n;
    }
  }
}

TEST(PerfData, MovementDataDiffersPerRankAndIndex) {
  for (int ti = 0; ti < kNumTypes; ++ti) {
    auto t = static_cast<mixcclDataType_t>(ti);
    const size_t es = typeInfo(t).size, count = 1000;
    DataPlan p = makePlan(t, mixcclSum, false, 4, 5);
    std::vector<unsigned char> r0(count * es), r1(count * es), shifted(count * es);
    fillInput(p, 0, 0, count, r0.data());
    fillInput(p, 1, 0, count, r1.data());
    fillInput(p, 0, 1, count, shifted.data());
    EXPECT_GT(countMismatches(t, r0.data(), r1.data(), count), count * 9 / 10);
    EXPECT_GT(countMismatches(t, r0.data(), shifted.data(), count), count * 9 / 10);
    // Same seed, same data: deterministic.
    std::vector<unsigned char> again(count * es);
    fillInput(p, 1, 0, count, again.data());
    EXPECT_EQ(countMismatches(t, r1.data(), again.data(), count), 0u);
  }
}

TEST(PerfData, PoisonIsNeverExpectedData) {
  for (int ti = 0; ti < kNumTypes; ++ti) {
    auto t = static_cast<mixcclDataType_t>(ti);
    const size_t es = typeInfo(t).size, count = 256;
    DataPlan p = makePlan(t, mixcclMax, true, 2, 9);
    std::vector<unsigned char> e(count * es), poisoned(count * es);
    fillReduced(p, 0, count, e.data());
    poison(poisoned.data(), poisoned.size());
    EXPECT_GT(countMismatches(t, poisoned.data(), e.data(), count), count / 2) << typeInfo(t).name;
  }
}

// ------------------------------------------------------------------------------------------
// Output

TEST(PerfOutput, Fields) {
  EXPECT_EQ(fixedField(12.345, 7), "  12.35");
  EXPECT_EQ(fixedField(123456.7, 7), " 123457");
  EXPECT_EQ(fixedField(12345.67, 7), "12345.7");
  EXPECT_EQ(fixedField(1234567.0, 7), "1234567");
  EXPECT_EQ(fixedField(0.0, 6), "  0.00");
  EXPECT_EQ(fixedField(123456789.0, 7).size(), 7u);
}

TEST(PerfOutput, RowLayout) {
  std::string row = rowPreamble(1048576, 262144, "float", "sum", -1) +
                    rowBody(123.4, 8.5, 8.5, true, 0) + rowBody(120.0, 8.7, 8.7, false, 0);
  EXPECT_EQ(row,
            "     1048576        262144     float     sum      -1   123.40    8.50    8.50       0"
            "   120.00    8.70    8.70    N/A");
  std::string h = tableHeader();
  EXPECT_NE(h.find("#wrong"), std::string::npos);
  EXPECT_NE(h.find("out-of-place"), std::string::npos);
  EXPECT_NE(h.find("(GB/s)"), std::string::npos);
  EXPECT_EQ(footer(0, 1.5), "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 1.5 \n#\n");
  EXPECT_NE(footer(2, 0).find(": 2 FAILED"), std::string::npos);
}

TEST(PerfOutput, Json) {
  ResultRecord r;
  r.bytes = 8;
  r.count = 2;
  r.type = "float";
  r.op = "sum";
  r.reportErrors[1] = false;
  DeviceRecord d;
  d.hostname = "h\"x";
  std::string doc = jsonDocument("p", {"a", "b\\c"}, "t0", "t1", "{}", {d}, {r}, 0, 1.0, 100);
  EXPECT_NE(doc.find("\"hostname\": \"h\\\"x\""), std::string::npos) << doc;
  EXPECT_NE(doc.find("\"b\\\\c\""), std::string::npos);
  EXPECT_NE(doc.find("\"nwrong\": null"), std::string::npos);
  EXPECT_NE(doc.find("\"nwrong\": 0"), std::string::npos);
  EXPECT_EQ(std::count(doc.begin(), doc.end(), '{'), std::count(doc.begin(), doc.end(), '}'));
}

}  // namespace
