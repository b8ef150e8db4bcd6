// Text table (nccl-tests' layout) and JSON output of the perf tools. Pure formatting, no I/O.
#ifndef MIXCCL_PERF_OUTPUT_H_
#define MIXCCL_PERF_OUTPUT_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace mixperf {

// value right-aligned in width columns with 2, 1 or 0 decimals, whichever fits, else exponent.
std::string fixedField(double value, int width);

std::string tableHeader();  // "#", the "out-of-place / in-place" line, column names, units
std::string rowPreamble(size_t bytes, size_t count, const char* type, const char* op, int root);
std::string rowBody(double timeUs, double algBw, double busBw, bool reportErrors, int64_t wrong);
std::string footer(int outOfBounds, double avgBusBw);

struct ResultRecord {
  size_t bytes = 0, count = 0;
  std::string type, op;
  int root = -1;
  double timeUs[2] = {0, 0}, algBw[2] = {0, 0}, busBw[2] = {0, 0};  // [0] out-of-place, [1] in-place
  int64_t wrong[2] = {0, 0};
  bool reportErrors[2] = {true, true};
};

struct DeviceRecord {
  int rank = 0, pid = 0, device = 0;
  std::string hostname, info;
};

// Minimal JSON string escaping.
std::string jsonString(const std::string& s);

// The whole JSON document of a run.
std::string jsonDocument(const std::string& program, const std::vector<std::string>& args,
                         const std::string& startTime, const std::string& endTime,
                         const std::string& configJson, const std::vector<DeviceRecord>& devices,
                         const std::vector<ResultRecord>& results, int outOfBounds,
                         double avgBusBw, int libraryVersion);

}  // namespace mixperf

#endif  // MIXCCL_PERF_OUTPUT_H_
