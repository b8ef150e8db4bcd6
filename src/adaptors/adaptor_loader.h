// Finds, opens, checks and initialises device adaptors (include/mixccl_adaptor.h), once per
// process. A failed load is always an error naming the file(s) and the problem: never a silent
// fallback to another adaptor.
#pragma once

#include <string>
#include <vector>

#include "core/result.h"
#include "mixccl_adaptor.h"

namespace mixccl {

struct Adaptor {
  const mixcclAdaptor_v1_t* table;  // never null
  std::string name;
  std::string path;  // file it was loaded from ("built-in" for host)
  // host: no native collectives (mixccl runs its own algorithms); the collective pointers of
  // its table are NULL.
  bool builtin;
};

// Loads the adaptor called name ("host" is built in; any other is libmixccl-adaptor-<name>.so
// searched in MIXCCL_PLUGIN_PATH's folders, then the folder of libmixccl.so, then the install
// libdir). Thread-safe; the result (success or failure) is cached, so init() runs once.
Result loadAdaptor(const std::string& name, const Adaptor** out);

// "" if the table is usable as adaptor expectedName, else what is wrong with it.
std::string checkAdaptorTable(const mixcclAdaptor_v1_t* table, const std::string& expectedName);

// The adaptor to use when none is configured: "nccl" when its plugin is found, loads, inits
// and sees at least one device; otherwise "host". Logs the reason at INFO.
std::string detectAdaptorName();

// The built-in host adaptor's table (host_adaptor.cc).
const mixcclAdaptor_v1_t* hostAdaptorTable();

// The file name a plugin called name must have: libmixccl-adaptor-<name>.so.
std::string adaptorFileName(const std::string& name);

// The folders searched for plugins, in order (MIXCCL_PLUGIN_PATH, libmixccl's folder, libdir).
std::vector<std::string> adaptorSearchPath();

}  // namespace mixccl
