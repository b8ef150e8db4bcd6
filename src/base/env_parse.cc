#include "base/env_parse.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>

namespace mixccl {
namespace {

std::string ignoring(const char* var, const char* value, const std::string& expected,
                     const std::string& used) {
  return std::string("ignoring ") + var + "=" + value + " (expected " + expected + "); using " +
         used;
}

}  // namespace

bool equalsIgnoreCase(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  }
  return true;
}

long long parseEnvInt(const char* var, const char* value, long long dflt, long long min,
                      long long max, std::string* warning) {
  warning->clear();
  if (value == nullptr || *value == '\0') return dflt;
  errno = 0;
  char* end = nullptr;
  long long x = std::strtoll(value, &end, 10);
  if (errno != 0 || end == value || *end != '\0' || x < min || x > max) {
    *warning = ignoring(var, value,
                        "an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]",
                        std::to_string(dflt));
    return dflt;
  }
  return x;
}

bool parseEnvBool(const char* var, const char* value, bool dflt, std::string* warning) {
  warning->clear();
  if (value == nullptr || *value == '\0') return dflt;
  for (const char* t : {"1", "true", "yes", "on"})
    if (equalsIgnoreCase(value, t)) return true;
  for (const char* f : {"0", "false", "no", "off"})
    if (equalsIgnoreCase(value, f)) return false;
  *warning = ignoring(var, value, "0 or 1 (or true/false, yes/no, on/off)", dflt ? "1" : "0");
  return dflt;
}

std::string parseEnvChoice(const char* var, const char* value,
                           std::initializer_list<const char*> choices, const char* dflt,
                           std::string* warning) {
  warning->clear();
  if (value == nullptr || *value == '\0') return dflt;
  std::string list;
  for (const char* c : choices) {
    if (equalsIgnoreCase(value, c)) return c;
    list += list.empty() ? "" : ", ";
    list += c;
  }
  *warning = ignoring(var, value, "one of " + list + ", in any case", dflt);
  return dflt;
}

}  // namespace mixccl
