#include "bootstrap/interface_match.h"

#include <vector>

namespace mixccl {
namespace {

std::vector<std::string> splitList(const std::string& s) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t end = s.find(',', pos);
    if (end == std::string::npos) end = s.size();
    if (end > pos) out.push_back(s.substr(pos, end - pos));
    pos = end + 1;
  }
  return out;
}

}  // namespace

bool interfaceMatches(const std::string& spec, const std::string& name) {
  if (spec.empty()) return name.compare(0, 2, "lo") != 0 && name.compare(0, 6, "docker") != 0;
  std::string s = spec;
  bool exclude = false, exact = false;
  if (!s.empty() && s[0] == '^') { exclude = true; s = s.substr(1); }
  if (!s.empty() && s[0] == '=') { exact = true; s = s.substr(1); }
  bool listed = false;
  for (const std::string& item : splitList(s)) {
    if (exact ? name == item : name.compare(0, item.size(), item) == 0) { listed = true; break; }
  }
  return exclude ? !listed : listed;
}

}  // namespace mixccl
