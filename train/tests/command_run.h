// What the trainer's and planner's CLI tests share: run a shell command with its output in
// files of this process, and read a file whole.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace mixccl_train_test {

struct CommandResult {
  int exit_code = -1;
  std::string out, err;
};

inline std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A path of this process (CTest may run several tests at once) under gtest's temp dir.
inline std::string TempPath(const std::string& prefix, const std::string& name) {
  return ::testing::TempDir() + "/" + prefix + "_" + std::to_string(getpid()) + "_" + name;
}

// Runs cmd with stdout and stderr captured (files named by prefix, removed after).
inline CommandResult RunCommand(const std::string& cmd, const std::string& prefix) {
  const std::string out = TempPath(prefix, "out"), err = TempPath(prefix, "err");
  const int status = std::system((cmd + " >" + out + " 2>" + err).c_str());
  CommandResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = Slurp(out);
  r.err = Slurp(err);
  std::remove(out.c_str());
  std::remove(err.c_str());
  return r;
}

}  // namespace mixccl_train_test
