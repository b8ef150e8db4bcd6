#include "fault_plan.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace standin {

FaultPlan::FaultPlan(const char* envName) {
  const char* env = std::getenv(envName);
  if (env == nullptr) return;
  text_ = env;
  size_t start = 0;
  while (start < text_.size()) {
    size_t end = text_.find(',', start);
    if (end == std::string::npos) end = text_.size();
    std::string item = text_.substr(start, end - start);
    start = end + 1;
    if (item.empty()) continue;
    size_t eq = item.find('=');
    char* tail = nullptr;
    auto* rule = new Rule;
    if (eq != std::string::npos) {
      rule->name = item.substr(0, eq);
      rule->code = static_cast<int>(std::strtol(item.c_str() + eq + 1, &tail, 10));
      if (tail && *tail == '@') rule->nth = std::strtol(tail + 1, &tail, 10);
    }
    // A plan that cannot be read must not silently inject nothing: the test would pass for
    // the wrong reason.
    if (eq == std::string::npos || rule->name.empty() || rule->code == 0 || !tail || *tail ||
        rule->nth < 0) {
      std::fprintf(stderr, "stand-in: cannot read %s item '%s' (expected NAME=CODE[@N])\n",
                   envName, item.c_str());
      std::abort();
    }
    rules_.push_back(rule);
  }
}

int FaultPlan::check(const char* name) {
  for (Rule* r : rules_) {
    if (r->name != name) continue;
    long call = ++r->calls;
    if (r->nth == 0 || r->nth == call) return r->code;
  }
  return 0;
}

}  // namespace standin
