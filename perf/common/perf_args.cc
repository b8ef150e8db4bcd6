#include "perf_args.h"

#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <sstream>

#include "perf_types.h"

namespace mixperf {

bool parseSize(const std::string& in, size_t* out) {
  std::string s = in;
  if (s.empty()) return false;
  if (s.back() == 'B' || s.back() == 'b') s.pop_back();
  if (s.empty()) return false;
  size_t mult = 1;
  char last = static_cast<char>(std::toupper(static_cast<unsigned char>(s.back())));
  switch (last) {
    case 'K': mult = size_t(1) << 10; break;
    case 'M': mult = size_t(1) << 20; break;
    case 'G': mult = size_t(1) << 30; break;
    case 'T': mult = size_t(1) << 40; break;
    default: break;
  }
  if (mult != 1) s.pop_back();
  if (s.empty()) return false;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  }
  errno = 0;
  unsigned long long v = std::strtoull(s.c_str(), nullptr, 10);
  if (errno == ERANGE) return false;
  if (v != 0 && mult > SIZE_MAX / v) return false;
  *out = static_cast<size_t>(v) * mult;
  return true;
}

namespace {

bool parseInt(const std::string& s, long lo, long hi, long* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  long v = std::strtol(s.c_str(), &end, 0);
  if (errno != 0 || end == s.c_str() || *end != '\0') return false;
  if (v < lo || v > hi) return false;
  *out = v;
  return true;
}

struct OptDef {
  char shortName;
  const char* longName;
};

const OptDef kOpts[] = {
    {'b', "minbytes"},    {'e', "maxbytes"},     {'i', "stepbytes"},   {'f', "stepfactor"},
    {'n', "iters"},       {'w', "warmup_iters"}, {'m', "agg_iters"},   {'N', "run_cycles"},
    {'c', "check"},       {'a', "average"},      {'T', "timeout"},     {'d', "datatype"},
    {'o', "op"},          {'r', "root"},         {'J', "output_file"}, {'t', "nthreads"},
    {'g', "ngpus"},       {'X', "inject_error"}, {'M', "memory"},      {'h', "help"},
};

}  // namespace

ParseResult parseArgs(int argc, const char* const* argv, PerfArgs* a, std::string* err) {
  bool stepBytesGiven = false, stepFactorGiven = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    char opt = 0;
    std::string value;
    bool haveValue = false;
    if (arg.size() >= 2 && arg[0] == '-' && arg[1] == '-') {
      std::string name = arg.substr(2);
      size_t eq = name.find('=');
      if (eq != std::string::npos) {
        value = name.substr(eq + 1);
        name = name.substr(0, eq);
        haveValue = true;
      }
      for (const OptDef& d : kOpts) {
        if (name == d.longName) opt = d.shortName;
      }
      if (opt == 0) {
        *err = "unknown option '" + arg + "'";
        return ParseResult::kError;
      }
    } else if (arg.size() >= 2 && arg[0] == '-') {
      opt = arg[1];
      bool known = false;
      for (const OptDef& d : kOpts) known |= (d.shortName == opt);
      if (!known) {
        *err = "unknown option '" + arg + "'";
        return ParseResult::kError;
      }
      if (arg.size() > 2) {
        value = arg.substr(2);
        haveValue = true;
      }
    } else {
      *err = "unexpected argument '" + arg + "'";
      return ParseResult::kError;
    }
    if (opt == 'h') return ParseResult::kHelp;
    if (!haveValue) {
      if (i + 1 >= argc) {
        *err = std::string("option '") + arg + "' needs a value";
        return ParseResult::kError;
      }
      value = argv[++i];
    }
    long v = 0;
    auto badValue = [&](const char* what) {
      *err = std::string("invalid ") + what + " '" + value + "' for option '" + arg + "'";
      return ParseResult::kError;
    };
    switch (opt) {
      case 'b':
        if (!parseSize(value, &a->minBytes)) return badValue("size");
        break;
      case 'e':
        if (!parseSize(value, &a->maxBytes)) return badValue("size");
        break;
      case 'i':
        if (!parseSize(value, &a->stepBytes) || a->stepBytes == 0) return badValue("step");
        stepBytesGiven = true;
        break;
      case 'f':
        if (!parseInt(value, 1, 1 << 20, &v)) return badValue("factor");
        a->stepFactor = static_cast<size_t>(v);
        stepFactorGiven = v > 1;
        break;
      case 'n':
        if (!parseInt(value, 1, INT_MAX, &v)) return badValue("iteration count");
        a->iters = static_cast<int>(v);
        break;
      case 'w':
        if (!parseInt(value, 0, INT_MAX, &v)) return badValue("warmup count");
        a->warmupIters = static_cast<int>(v);
        break;
      case 'm':
        if (!parseInt(value, 1, 1 << 16, &v)) return badValue("aggregation count");
        a->aggIters = static_cast<int>(v);
        break;
      case 'N':
        if (!parseInt(value, 0, INT_MAX, &v)) return badValue("cycle count");
        a->cycles = static_cast<int>(v);
        break;
      case 'c':
        if (!parseInt(value, 0, INT_MAX, &v)) return badValue("check count");
        a->check = static_cast<int>(v);
        break;
      case 'a':
        if (!parseInt(value, 0, 3, &v)) return badValue("average mode (0..3)");
        a->average = static_cast<int>(v);
        break;
      case 'T':
        if (!parseInt(value, 0, INT_MAX, &v)) return badValue("timeout");
        a->timeoutSec = static_cast<int>(v);
        break;
      case 'd': {
        a->types.clear();
        if (value == "all") {
          for (int t = 0; t < kNumTypes; ++t) a->types.push_back(static_cast<mixcclDataType_t>(t));
        } else {
          std::stringstream ss(value);
          std::string item;
          while (std::getline(ss, item, ',')) {
            mixcclDataType_t t;
            if (!parseTypeName(item, &t)) return badValue("datatype");
            a->types.push_back(t);
          }
          if (a->types.empty()) return badValue("datatype");
        }
        break;
      }
      case 'o': {
        a->ops.clear();
        if (value == "all") {
          for (int o = 0; o < kNumOps; ++o) a->ops.push_back(static_cast<mixcclRedOp_t>(o));
        } else {
          std::stringstream ss(value);
          std::string item;
          while (std::getline(ss, item, ',')) {
            mixcclRedOp_t o;
            if (!parseOpName(item, &o)) return badValue("op");
            a->ops.push_back(o);
          }
          if (a->ops.empty()) return badValue("op");
        }
        break;
      }
      case 'r':
        if (value == "all") {
          a->allRoots = true;
        } else {
          if (!parseInt(value, 0, INT_MAX, &v)) return badValue("root");
          a->root = static_cast<int>(v);
          a->allRoots = false;
        }
        break;
      case 'J':
        a->jsonPath = value;
        break;
      case 't':
      case 'g':
        if (!parseInt(value, 1, 1, &v)) {
          *err = std::string("option '") + arg +
                 "': mixccl perf tools run one rank per process (only 1 is accepted); start more "
                 "processes with mixcclrun, mpirun, srun or torchrun";
          return ParseResult::kError;
        }
        break;
      case 'M':
        if (value == "auto") a->memory = PerfArgs::Memory::kAuto;
        else if (value == "device") a->memory = PerfArgs::Memory::kDevice;
        else if (value == "host") a->memory = PerfArgs::Memory::kHost;
        else return badValue("memory (auto, device or host)");
        break;
      case 'X':
        if (!parseInt(value, -1, INT_MAX, &v)) return badValue("rank");
        a->injectErrorRank = static_cast<int>(v);
        break;
      default:
        break;
    }
  }
  if (stepBytesGiven && stepFactorGiven) {
    *err = "use either -i (step bytes) or -f (step factor), not both";
    return ParseResult::kError;
  }
  if (a->minBytes > a->maxBytes) {
    *err = "invalid sizes: minbytes " + std::to_string(a->minBytes) + " > maxbytes " +
           std::to_string(a->maxBytes);
    return ParseResult::kError;
  }
  return ParseResult::kOk;
}

std::vector<size_t> sizeSweep(const PerfArgs& a) {
  std::vector<size_t> sizes;
  size_t s = a.minBytes;
  while (s <= a.maxBytes) {
    sizes.push_back(s);
    size_t next;
    if (a.stepFactor > 1) {
      next = s == 0 ? 1 : s * a.stepFactor;
      if (s != 0 && next / a.stepFactor != s) break;  // overflow
    } else {
      next = s + a.stepBytes;
      if (next < s) break;
    }
    s = next;
  }
  return sizes;
}

std::string usage(const char* prog) {
  std::string u = "USAGE: ";
  u += prog;
  u +=
      " [options]\n"
      "  -b,--minbytes <size>        minimum size to start with (default 32M); K/M/G/T suffixes\n"
      "  -e,--maxbytes <size>        maximum size to end at (default 32M)\n"
      "  -i,--stepbytes <size>       fixed increment between sizes (default 1M)\n"
      "  -f,--stepfactor <factor>    multiplication factor between sizes (default: disabled)\n"
      "  -n,--iters <count>          timed iterations per size (default 20)\n"
      "  -w,--warmup_iters <count>   warmup iterations, not timed (default 1)\n"
      "  -m,--agg_iters <count>      operations aggregated in one group per iteration (default 1)\n"
      "  -N,--run_cycles <count>     repeat the whole sweep, printing each cycle (default 1; 0 = forever)\n"
      "  -c,--check <count>          checked runs per size and placement (default 1; 0 = no check)\n"
      "  -o,--op <sum|prod|max|min|avg|all>[,...]   reduction op (default sum)\n"
      "  -d,--datatype <type|all>[,...]  int8 uint8 int32 uint32 int64 uint64 half float double\n"
      "                              bfloat16 f8e4m3 f8e5m2 (default float)\n"
      "  -r,--root <rank|all>        root of rooted collectives (default 0)\n"
      "  -a,--average <0|1|2|3>      time reported: 0 rank 0, 1 average, 2 min, 3 max over ranks (default 1)\n"
      "  -T,--timeout <seconds>      abort an operation that takes longer (default 0: none)\n"
      "  -J,--output_file <file>     also write the results as JSON (written by rank 0)\n"
      "  -t,--nthreads 1, -g,--ngpus 1   accepted for compatibility (one rank per process)\n"
      "  -M,--memory <auto|device|host>  buffers: auto = the memory of each rank's adaptor (device\n"
      "                              memory on nccl, as nccl-tests), device = device memory (a rank\n"
      "                              on a host-memory adaptor is refused), host = host memory and\n"
      "                              the host adaptor where MIXCCL_ADAPTOR is unset (default auto)\n"
      "  -X,--inject_error <rank>    checker self-test: corrupt one result element on that rank\n"
      "  -h,--help                   this help\n"
      "Ranks come from mixcclrun, mpirun, srun or torchrun (docs/launching.md).\n";
  return u;
}

}  // namespace mixperf
