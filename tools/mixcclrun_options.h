// mixcclrun's command line (docs/launching.md): parsed apart from the launcher loop.
#ifndef MIXCCLRUN_OPTIONS_H_
#define MIXCCLRUN_OPTIONS_H_

#include <string>
#include <utility>
#include <vector>

#include "mixcclrun_binding.h"

namespace mixcclrun {

extern const char* const kProg;

struct Options {
  int np = 0;
  std::vector<std::string> hosts;
  std::vector<std::pair<std::string, std::string>> exports;
  // --adaptors: MIXCCL_ADAPTOR of each rank (empty: the ranks inherit or detect theirs).
  std::vector<std::string> adaptors;
  double graceS = 3.0;
  double timeoutS = 0.0;
  bool prefix = true;
  // --keep-going: a failed rank does not end the others (a job that survives lost ranks).
  bool keepGoing = false;
  BindMode bind = BindMode::Auto;  // --bind-to
  std::vector<std::string> command;
};

// Prints "mixcclrun: msg" and exits with status 2 (a usage error: nothing was started).
[[noreturn]] void die(const std::string& msg);

// Parses argv, or exits: 0 after --help, 2 with a message for a usage error.
Options parseArgs(int argc, char** argv);

// "host,gloo,host,gloo" or "host:2,gloo:2" (NAME or NAME:COUNT entries, in rank order) into one
// name per rank. Returns "" or what is wrong with spec.
std::string expandAdaptors(const std::string& spec, std::vector<std::string>* out);

}  // namespace mixcclrun

#endif  // MIXCCLRUN_OPTIONS_H_
