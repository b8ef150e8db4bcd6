// The nccl adaptor finds its two libraries by the names it is given and says exactly what is
// wrong when one is absent or is not what it should be: no GPU and no driver needed. Each case
// runs init() in a forked child (init runs once per process, and each case sets its own
// MIXCCL_NCCL_LIBRARY / MIXCCL_CUDA_RUNTIME_LIBRARY) against the fake vendor libraries of
// fake_vendor_runtime.c and fake_vendor_nccl.c. The plugin under test is NCCL_PLUGIN_FILE, or
// NCCL_PLUGIN_UNDER_TEST when set (CTest runs these cases on the hand-typed build too).
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <utility>
#include <vector>

#include "mixccl_adaptor.h"

#if !defined(NCCL_PLUGIN_FILE) || !defined(FAKE_VENDOR_DIR)
#error "NCCL_PLUGIN_FILE and FAKE_VENDOR_DIR must be defined"
#endif

namespace {

const std::string kDir = FAKE_VENDOR_DIR;

std::string pluginFile() {
  const char* p = getenv("NCCL_PLUGIN_UNDER_TEST");
  return p != nullptr && *p ? p : NCCL_PLUGIN_FILE;
}

// What the child saw: init's result and message, then (after a successful init) the device
// count and the messages of one runtime call and one library call that the fakes refuse.
struct Outcome {
  int init = -1;
  std::string initError;
  int devices = -1;
  std::string allocError;
  std::string uniqueIdError;
};

void writeLine(int fd, const std::string& s) {
  std::string line = s + "\n";
  for (size_t off = 0; off < line.size();) {
    ssize_t n = write(fd, line.data() + off, line.size() - off);
    if (n <= 0) _exit(3);
    off += static_cast<size_t>(n);
  }
}

[[noreturn]] void child(int fd, const std::vector<std::pair<std::string, std::string>>& env) {
  unsetenv("MIXCCL_NCCL_LIBRARY");
  unsetenv("MIXCCL_CUDA_RUNTIME_LIBRARY");
  for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
  void* h = dlopen(pluginFile().c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    writeLine(fd, std::string("dlopen: ") + dlerror());
    _exit(2);
  }
  auto* t = static_cast<const mixcclAdaptor_v2_t*>(dlsym(h, MIXCCL_ADAPTOR_SYMBOL));
  if (t == nullptr) _exit(2);
  mixcclResult_t r = t->init();
  writeLine(fd, std::to_string(r));
  writeLine(fd, r == mixcclSuccess ? "" : t->lastError());
  if (r == mixcclSuccess) {
    int n = -1;
    writeLine(fd, t->getDeviceCount(&n) == mixcclSuccess ? std::to_string(n) : t->lastError());
    void* p = nullptr;
    writeLine(fd, t->memAlloc(&p, 64) == mixcclSuccess ? "allocated" : t->lastError());
    char id[MIXCCL_ADAPTOR_UNIQUE_ID_BYTES];
    writeLine(fd, t->getUniqueId(id) == mixcclSuccess ? "unique id" : t->lastError());
  }
  _exit(0);
}

// Runs one case in a child, bounded by 20 s of output and 20 s to exit (killed and reaped
// after that).
Outcome initInChild(const std::vector<std::pair<std::string, std::string>>& env) {
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    child(fds[1], env);
  }
  close(fds[1]);
  std::string out;
  char buf[4096];
  pollfd p{fds[0], POLLIN, 0};
  while (poll(&p, 1, 20000) > 0) {
    ssize_t n = read(fds[0], buf, sizeof buf);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  // The pipe closes as the child exits; it may still need a moment to be reapable.
  int status = 0;
  pid_t done = 0;
  for (int i = 0; i < 2000 && (done = waitpid(pid, &status, WNOHANG)) == 0; ++i) usleep(10000);
  if (done == 0) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    ADD_FAILURE() << "the child did not finish in 20 s; it printed: " << out;
  }
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status << ": " << out;
  std::vector<std::string> lines;
  for (size_t start = 0, end; (end = out.find('\n', start)) != std::string::npos; start = end + 1)
    lines.push_back(out.substr(start, end - start));
  Outcome o;
  if (lines.size() >= 2) {
    o.init = std::stoi(lines[0]);
    o.initError = lines[1];
  }
  if (lines.size() >= 5) {
    o.devices = std::atoi(lines[2].c_str());
    o.allocError = lines[3];
    o.uniqueIdError = lines[4];
  }
  return o;
}

const std::pair<std::string, std::string> fakeNccl{"MIXCCL_NCCL_LIBRARY", kDir + "/libfakenccl.so"};
const std::pair<std::string, std::string> fakeCudart{"MIXCCL_CUDA_RUNTIME_LIBRARY",
                                                     kDir + "/libfakecudart.so"};

}  // namespace

TEST(NcclAdaptorLibraries, LoadsRuntimeAndLibraryByPath) {
  Outcome o = initInChild({fakeNccl, fakeCudart});
  ASSERT_EQ(o.init, mixcclSuccess) << o.initError;
  EXPECT_EQ(o.devices, 1);
  EXPECT_EQ(o.allocError, "nccl adaptor: cudaMalloc: CUDA error 2: fake cudart: out of memory");
  EXPECT_EQ(o.uniqueIdError,
            "nccl adaptor: ncclGetUniqueId: fake nccl: internal error (NCCL 22809, code 3)");
}

TEST(NcclAdaptorLibraries, LoadsRuntimeAndLibraryByName) {
  // A bare name goes through the loader's search, which reads LD_LIBRARY_PATH at start-up.
  const char* ld = getenv("LD_LIBRARY_PATH");
  ASSERT_TRUE(ld != nullptr && std::string(ld).find(kDir) != std::string::npos)
      << "run with LD_LIBRARY_PATH=" << kDir << " (CTest sets it)";
  Outcome o = initInChild({{"MIXCCL_NCCL_LIBRARY", "libfakenccl.so"},
                           {"MIXCCL_CUDA_RUNTIME_LIBRARY", "libfakecudart.so"}});
  ASSERT_EQ(o.init, mixcclSuccess) << o.initError;
  EXPECT_EQ(o.devices, 1);
  EXPECT_EQ(o.allocError, "nccl adaptor: cudaMalloc: CUDA error 2: fake cudart: out of memory");
}

TEST(NcclAdaptorLibraries, BindsHipNamesOfAHipRuntime) {
  Outcome o = initInChild({fakeNccl, {"MIXCCL_CUDA_RUNTIME_LIBRARY", kDir + "/libfakehip.so"}});
  ASSERT_EQ(o.init, mixcclSuccess) << o.initError;
  EXPECT_EQ(o.devices, 1);
  EXPECT_EQ(o.allocError, "nccl adaptor: hipMalloc: HIP error 2: fake hip: out of memory");
}

TEST(NcclAdaptorLibraries, NoDeviceIsRefusedWithTheRuntimeCount) {
  Outcome o = initInChild({fakeNccl, fakeCudart, {"FAKE_VENDOR_DEVICES", "0"}});
  EXPECT_EQ(o.init, mixcclSystemError);
  EXPECT_EQ(o.initError,
            "nccl adaptor: no usable CUDA device (cudaGetDeviceCount: 0 devices)");
  o = initInChild({fakeNccl, fakeCudart, {"FAKE_VENDOR_DEVICES", "-1"}});
  EXPECT_EQ(o.init, mixcclSystemError);
  EXPECT_EQ(o.initError,
            "nccl adaptor: no usable CUDA device (cudaGetDeviceCount: fake cudart: no driver)");
}

TEST(NcclAdaptorLibraries, AbsentRuntimeFileIsNamed) {
  const std::string absent = kDir + "/libabsent-cudart.so";
  Outcome o = initInChild({fakeNccl, {"MIXCCL_CUDA_RUNTIME_LIBRARY", absent}});
  EXPECT_EQ(o.init, mixcclSystemError);
  EXPECT_EQ(o.initError, "nccl adaptor: cannot load the CUDA runtime (MIXCCL_CUDA_RUNTIME_LIBRARY=" +
                             absent + ": " + absent +
                             ": cannot open shared object file: No such file or directory)");
}

TEST(NcclAdaptorLibraries, AbsentNcclFileIsNamed) {
  const std::string absent = kDir + "/libabsent-nccl.so";
  Outcome o = initInChild({{"MIXCCL_NCCL_LIBRARY", absent}, fakeCudart});
  EXPECT_EQ(o.init, mixcclSystemError);
  EXPECT_EQ(o.initError, "nccl adaptor: cannot load NCCL (MIXCCL_NCCL_LIBRARY=" + absent + ": " +
                             absent + ": cannot open shared object file: No such file or directory)");
}

TEST(NcclAdaptorLibraries, RuntimeMissingASymbolIsNamed) {
  const std::string file = kDir + "/libfakecudart-nohostfunc.so";
  Outcome o = initInChild({fakeNccl, {"MIXCCL_CUDA_RUNTIME_LIBRARY", file}});
  EXPECT_EQ(o.init, mixcclSystemError);
  EXPECT_EQ(o.initError, "nccl adaptor: " + file + ": missing cudaLaunchHostFunc");
}

TEST(NcclAdaptorLibraries, NcclMissingASymbolIsNamed) {
  const std::string file = kDir + "/libfakenccl-nogroupend.so";
  Outcome o = initInChild({{"MIXCCL_NCCL_LIBRARY", file}, fakeCudart});
  EXPECT_EQ(o.init, mixcclSystemError);
  EXPECT_EQ(o.initError, "nccl adaptor: " + file + ": missing ncclGroupEnd");
}

TEST(NcclAdaptorLibraries, WrongLibrariesAreRefused) {
  // The NCCL library named as the runtime, and the runtime named as the NCCL library.
  Outcome o = initInChild({fakeNccl, {"MIXCCL_CUDA_RUNTIME_LIBRARY", fakeNccl.second}});
  EXPECT_EQ(o.init, mixcclSystemError);
  EXPECT_EQ(o.initError, "nccl adaptor: " + fakeNccl.second +
                             " is not a CUDA or HIP runtime (it has neither cudaGetDeviceCount nor "
                             "hipGetDeviceCount)");
  o = initInChild({{"MIXCCL_NCCL_LIBRARY", fakeCudart.second}, fakeCudart});
  EXPECT_EQ(o.init, mixcclSystemError);
  EXPECT_EQ(o.initError,
            "nccl adaptor: " + fakeCudart.second +
                ": missing ncclGetVersion, ncclGetUniqueId, ncclCommInitRank, ncclCommDestroy, "
                "ncclCommAbort, ncclAllReduce, ncclAllGather, ncclReduceScatter, ncclBroadcast, "
                "ncclReduce, ncclSend, ncclRecv, ncclGroupStart, ncclGroupEnd, ncclGetErrorString");
}
