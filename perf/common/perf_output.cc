#include "perf_output.h"

#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <sstream>

namespace mixperf {

namespace {

std::string fmt(const char* f, ...) __attribute__((format(printf, 1, 2)));
std::string fmt(const char* f, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, f);
  std::vsnprintf(buf, sizeof(buf), f, ap);
  va_end(ap);
  return buf;
}

std::string jsonNumber(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.6g", v);
  return buf;
}

}  // namespace

std::string fixedField(double value, int width) {
  char buf[64];
  for (int decimals = 2; decimals >= 0; --decimals) {
    int n = std::snprintf(buf, sizeof(buf), "%*.*f", width, decimals, value);
    if (n <= width) return buf;
  }
  std::snprintf(buf, sizeof(buf), width >= 7 ? "%*.1e" : "%*.0e", width, value);
  return buf;
}

std::string tableHeader() {
  std::string h = "#\n";
  h += fmt("# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place\n",
           "", "", "", "", "");
  h += fmt("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s\n", "size",
           "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw",
           "busbw", "#wrong");
  h += fmt("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s\n", "(B)",
           "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
  return h;
}

std::string rowPreamble(size_t bytes, size_t count, const char* type, const char* op, int root) {
  return fmt("%12zu  %12zu  %8s  %6s  %6d", bytes, count, type, op, root);
}

std::string rowBody(double timeUs, double algBw, double busBw, bool reportErrors, int64_t wrong) {
  std::string t = fixedField(timeUs, 7), a = fixedField(algBw, 6), b = fixedField(busBw, 6);
  if (!reportErrors) return fmt("  %7s  %6s  %6s    N/A", t.c_str(), a.c_str(), b.c_str());
  return fmt("  %7s  %6s  %6s  %6lld", t.c_str(), a.c_str(), b.c_str(),
             static_cast<long long>(wrong));
}

std::string footer(int outOfBounds, double avgBusBw) {
  std::string f = fmt("# %-20s : %d %s\n", "Out of bounds values", outOfBounds,
                      outOfBounds ? "FAILED" : "OK");
  f += fmt("# %-20s : %g \n", "Avg bus bandwidth", avgBusBw);
  f += "#\n";
  return f;
}

std::string jsonString(const std::string& s) {
  std::string o = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': o += "\\\""; break;
      case '\\': o += "\\\\"; break;
      case '\n': o += "\\n"; break;
      case '\t': o += "\\t"; break;
      case '\r': o += "\\r"; break;
      default:
        if (c < 0x20) {
          o += fmt("\\u%04x", c);
        } else {
          o += static_cast<char>(c);
        }
    }
  }
  return o + "\"";
}

std::string jsonDocument(const std::string& program, const std::vector<std::string>& args,
                         const std::string& startTime, const std::string& endTime,
                         const std::string& configJson, const std::vector<DeviceRecord>& devices,
                         const std::vector<ResultRecord>& results, int outOfBounds,
                         double avgBusBw, int libraryVersion) {
  std::ostringstream o;
  o << "{\n  \"version\": 1,\n  \"program\": " << jsonString(program)
    << ",\n  \"mixccl_version\": " << libraryVersion << ",\n  \"start_time\": "
    << jsonString(startTime) << ",\n  \"args\": [";
  for (size_t i = 0; i < args.size(); ++i) o << (i ? ", " : "") << jsonString(args[i]);
  o << "],\n  \"config\": " << configJson << ",\n  \"devices\": [";
  for (size_t i = 0; i < devices.size(); ++i) {
    const DeviceRecord& d = devices[i];
    o << (i ? "," : "") << "\n    {\"rank\": " << d.rank << ", \"pid\": " << d.pid
      << ", \"hostname\": " << jsonString(d.hostname) << ", \"device\": " << d.device
      << ", \"device_info\": " << jsonString(d.info) << "}";
  }
  o << "\n  ],\n  \"results\": [";
  for (size_t i = 0; i < results.size(); ++i) {
    const ResultRecord& r = results[i];
    o << (i ? "," : "") << "\n    {\"size\": " << r.bytes << ", \"count\": " << r.count
      << ", \"type\": " << jsonString(r.type) << ", \"redop\": " << jsonString(r.op)
      << ", \"root\": " << r.root;
    for (int p = 0; p < 2; ++p) {
      o << ", \"" << (p == 0 ? "out_of_place" : "in_place") << "\": {\"time\": "
        << jsonNumber(r.timeUs[p]) << ", \"alg_bw\": " << jsonNumber(r.algBw[p])
        << ", \"bus_bw\": " << jsonNumber(r.busBw[p]) << ", \"nwrong\": "
        << (r.reportErrors[p] ? std::to_string(r.wrong[p]) : std::string("null")) << "}";
    }
    o << "}";
  }
  o << "\n  ],\n  \"out_of_bounds\": {\"count\": " << outOfBounds
    << ", \"okay\": " << (outOfBounds == 0 ? "true" : "false")
    << "},\n  \"average_bus_bandwidth\": {\"bandwidth\": " << jsonNumber(avgBusBw)
    << "},\n  \"end_time\": " << jsonString(endTime) << "\n}\n";
  return o.str();
}

}  // namespace mixperf
