// Fault injection for the stand-in libraries, read from one environment variable each:
//   NAME=CODE[@N][,NAME=CODE[@N]...]
// makes the N-th call of NAME in this process (every call without @N) return CODE instead of
// running. NAME is a function name (cudaMalloc, ncclAllReduce) or, for the runtime's
// asynchronous faults, the kind of stream operation (memcpy, hostfunc, nccl). The plan is read
// once, on first use, so a test sets the variable before the libraries are loaded (a forked
// rank can set its own).
#pragma once

#include <atomic>
#include <string>
#include <vector>

namespace standin {

class FaultPlan {
 public:
  explicit FaultPlan(const char* envName);
  // The code this call of `name` must fail with, or 0 to run it. Counts the call.
  int check(const char* name);
  // The variable's text, for messages ("" when unset).
  const std::string& text() const { return text_; }

 private:
  struct Rule {
    std::string name;
    int code = 0;
    long nth = 0;  // 0: every call
    std::atomic<long> calls{0};
  };
  std::string text_;
  std::vector<Rule*> rules_;  // never freed: checked from stream threads until exit
};

}  // namespace standin
