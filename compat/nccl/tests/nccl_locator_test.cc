// The nccl adaptor never reaches the shim (plugins/adaptors/nccl/nccl_library.h): an explicit
// MIXCCL_NCCL_LIBRARY naming the shim, a search that finds only the shim, and the bare loader
// name while the shim is preloaded are all refused with messages that say so; a search that
// also finds NVIDIA's NCCL picks that one. Run with LD_PRELOAD=<shim> (CTest sets it), the
// situation of an NCCL program run on the shim whose ranks use the nccl adaptor. No GPU needed.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "mixccl.h"
#include "nccl_library.h"

#ifndef SHIM_DIR
#error "SHIM_DIR (the folder of the shim's libnccl.so.2) must be defined"
#endif

namespace {

const std::string kShim = std::string(SHIM_DIR) + "/libnccl.so.2";
const std::string kRefused = ": mixccl's NCCL shim (exports mixcclNcclShimMarker), not NVIDIA's NCCL";
const char* kRealDir = "/usr/local/cuda/lib64";  // the toolkit's NCCL, where this machine has it

bool preloaded() {
  const char* p = getenv("LD_PRELOAD");
  return p != nullptr && std::string(p).find("libnccl.so.2") != std::string::npos;
}

using ncclGetVersionFn = int (*)(int*);

}  // namespace

TEST(NcclLocator, ExplicitPathToTheShimIsRefused) {
  mixccl_nccl::NcclSearch s;
  s.explicitPath = kShim;
  void* h = nullptr;
  std::string path;
  EXPECT_EQ(mixccl_nccl::openRealNccl(s, &h, &path), "MIXCCL_NCCL_LIBRARY=" + kShim + kRefused);
  EXPECT_EQ(h, nullptr);
}

TEST(NcclLocator, OnlyTheShimFoundIsAnError) {
  if (!preloaded()) GTEST_SKIP() << "needs LD_PRELOAD=<shim> (the bare name must reach the shim)";
  mixccl_nccl::NcclSearch s;
  s.directories = {SHIM_DIR, SHIM_DIR "/."};  // the same file twice is tried once
  void* h = nullptr;
  std::string path;
  EXPECT_EQ(mixccl_nccl::openRealNccl(s, &h, &path),
            kShim + kRefused + "; libnccl.so.2" + kRefused +
                "; set MIXCCL_NCCL_LIBRARY to NVIDIA's libnccl.so.2");
  EXPECT_EQ(h, nullptr);
}

TEST(NcclLocator, NothingFoundSaysWhereToPointIt) {
  mixccl_nccl::NcclSearch s;
  s.directories = {"/nonexistent"};
  s.tryLoaderName = false;
  void* h = nullptr;
  std::string path;
  EXPECT_EQ(mixccl_nccl::openRealNccl(s, &h, &path),
            "no libnccl.so.2 in the folders searched; set MIXCCL_NCCL_LIBRARY to NVIDIA's "
            "libnccl.so.2");
}

TEST(NcclLocator, NvidiasNcclIsFoundPastTheShim) {
  const std::string real = std::string(kRealDir) + "/libnccl.so.2";
  if (access(real.c_str(), F_OK) != 0) GTEST_SKIP() << "no NVIDIA NCCL at " << real;
  mixccl_nccl::NcclSearch s;
  s.directories = {SHIM_DIR, kRealDir};
  s.tryLoaderName = false;
  void* h = nullptr;
  std::string path;
  ASSERT_EQ(mixccl_nccl::openRealNccl(s, &h, &path), "");
  EXPECT_EQ(path, real);
  EXPECT_EQ(dlsym(h, mixccl_nccl::kShimMarker), nullptr);
  // Its ncclGetVersion is NVIDIA's, not the shim's 23007, even with the shim preloaded.
  auto getVersion = reinterpret_cast<ncclGetVersionFn>(dlsym(h, "ncclGetVersion"));
  ASSERT_NE(getVersion, nullptr);
  int v = 0;
  EXPECT_EQ(getVersion(&v), 0);
  EXPECT_GT(v, 0);
  EXPECT_NE(v, 23007);
  // The explicit path works too.
  mixccl_nccl::NcclSearch e;
  e.explicitPath = real;
  void* h2 = nullptr;
  EXPECT_EQ(mixccl_nccl::openRealNccl(e, &h2, &path), "");
  EXPECT_EQ(h2, h);  // the same library, loaded once
}

TEST(NcclLocator, DefaultSearchNeverGivesTheShim) {
  unsetenv("MIXCCL_NCCL_LIBRARY");
  void* h = nullptr;
  std::string path;
  std::string why = mixccl_nccl::openRealNccl(mixccl_nccl::defaultNcclSearch(), &h, &path);
  if (h == nullptr) {
    EXPECT_NE(why.find("set MIXCCL_NCCL_LIBRARY"), std::string::npos) << why;
    GTEST_SKIP() << "no NVIDIA NCCL on this machine: " << why;
  }
  EXPECT_EQ(dlsym(h, mixccl_nccl::kShimMarker), nullptr) << path;
}

// The adaptor itself: a rank on the nccl adaptor with MIXCCL_NCCL_LIBRARY at the shim fails its
// init with the refusal, through the public API.
TEST(NcclLocator, AdaptorInitRefusesTheShim) {
  setenv("MIXCCL_NCCL_LIBRARY", kShim.c_str(), 1);
  setenv("MIXCCL_ADAPTOR", "nccl", 1);
  mixcclComm_t comm = nullptr;
  EXPECT_NE(mixcclCommInitAll(&comm, 1, nullptr), mixcclSuccess);
  const std::string msg = mixcclGetLastError(nullptr);
  EXPECT_NE(msg.find("nccl adaptor: cannot load NCCL (MIXCCL_NCCL_LIBRARY=" + kShim + kRefused + ")"),
            std::string::npos)
      << msg;
}

// With the shim preloaded and no MIXCCL_NCCL_LIBRARY, the adaptor's own search gets past the
// shim to NVIDIA's NCCL: its init then fails later (no GPU here) or succeeds, never on NCCL.
TEST(NcclLocator, AdaptorInitUnderPreloadGetsPastTheShim) {
  if (!preloaded()) GTEST_SKIP() << "needs LD_PRELOAD=<shim>";
  if (access((std::string(kRealDir) + "/libnccl.so.2").c_str(), F_OK) != 0)
    GTEST_SKIP() << "no NVIDIA NCCL in " << kRealDir;
  unsetenv("MIXCCL_NCCL_LIBRARY");
  setenv("MIXCCL_ADAPTOR", "nccl", 1);
  mixcclComm_t comm = nullptr;
  if (mixcclCommInitAll(&comm, 1, nullptr) == mixcclSuccess) {
    mixcclCommDestroy(comm);
    return;  // a GPU machine: the adaptor ran on NVIDIA's NCCL
  }
  const std::string msg = mixcclGetLastError(nullptr);
  EXPECT_EQ(msg.find("cannot load NCCL"), std::string::npos) << msg;
  EXPECT_NE(msg.find("nccl adaptor: "), std::string::npos) << msg;
}
