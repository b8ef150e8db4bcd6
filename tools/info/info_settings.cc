// Settings: every MIXCCL_* variable the library documents (docs/environment.md's table, read
// into info_known_settings.h at configure time) with its value and source, and the MIXCCL_*
// variables that are set but are not among them (a misspelt name does nothing).
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "info_known_settings.h"
#include "info_probes.h"

extern char** environ;

namespace mixccl_info {
namespace {

constexpr const char* kPrefix = "MIXCCL_";
// Values never printed: the secret authenticates every connection of a job.
bool isSecret(const std::string& name) { return name == "MIXCCL_COMM_SECRET"; }

}  // namespace

std::vector<SettingFact> probeSettings() {
  std::vector<SettingFact> out;
  for (const KnownSetting& k : kKnownSettings) {
    const char* v = getenv(k.name);
    if (v != nullptr) {
      out.push_back({k.name, isSecret(k.name) ? "(set, hidden)" : v, "environment"});
    } else {
      out.push_back({k.name, k.defaultValue, "default"});
    }
  }
  std::vector<SettingFact> unknown;
  for (char** e = environ; *e != nullptr; e++) {
    std::string entry = *e;
    if (entry.compare(0, strlen(kPrefix), kPrefix) != 0) continue;
    size_t eq = entry.find('=');
    std::string name = entry.substr(0, eq);
    bool known = std::any_of(std::begin(kKnownSettings), std::end(kKnownSettings),
                             [&](const KnownSetting& k) { return name == k.name; });
    if (!known) {
      unknown.push_back({name, eq == std::string::npos ? "" : entry.substr(eq + 1),
                         "environment, not a library setting of docs/environment.md (launchers "
                         "read MIXCCL_RANK and the like: docs/launching.md)"});
    }
  }
  std::sort(unknown.begin(), unknown.end(),
            [](const SettingFact& a, const SettingFact& b) { return a.name < b.name; });
  out.insert(out.end(), unknown.begin(), unknown.end());
  return out;
}

}  // namespace mixccl_info
