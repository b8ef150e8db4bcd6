// Finds, opens, checks and initialises device adaptors (include/mixccl_adaptor.h), once per
// process. A failed load is always an error naming the file(s) and the problem: never a silent
// fallback to another adaptor.
#pragma once

#include <string>
#include <vector>

#include "base/result.h"
#include "adaptors/adaptor_table.h"

namespace mixccl {

struct Adaptor {
  const AdaptorTable* table;  // never null; lives as long as the process
  std::string name;
  std::string path;  // file it was loaded from ("built-in" for host)
  bool builtin;      // the host adaptor (no native library: mixccl runs its own algorithms)
  mixcclAdaptor_v2_t publicTable;  // what mixcclCommGetAdaptor hands out (public_table.h)
};

// Loads the adaptor called name ("host" is built in; any other is libmixccl-adaptor-<name>.so
// searched in MIXCCL_PLUGIN_PATH's folders, then the folder of libmixccl.so, then the install
// libdir (none in the pip-installed package: MIXCCL_PLUGIN_INSTALL_DIR), exporting a version 2
// table or, from older plugins, a version 1 table). Thread-safe; the result (success or
// failure) is cached, so init() runs once.
Result loadAdaptor(const std::string& name, const Adaptor** out);


// The adaptor to use when none is configured: "nccl" when its plugin is found, loads, inits
// and sees at least one device; otherwise "host". Logs the reason at INFO.
std::string detectAdaptorName();

// The built-in host adaptor's table (host_adaptor.cc).
const AdaptorTable* hostAdaptorTable();

// The file name a plugin called name must have: libmixccl-adaptor-<name>.so.
std::string adaptorFileName(const std::string& name);

// The folders searched for plugins, in order (MIXCCL_PLUGIN_PATH, libmixccl's folder, libdir).
std::vector<std::string> adaptorSearchPath();

}  // namespace mixccl
