// The adaptor loader against fake plugins built by tests/adaptors/CMakeLists.txt:
//   FAKE_DIR_B: fakeok (getDeviceCount 2)
//   FAKE_DIR_A: fakeok (getDeviceCount 1), fakeonlya, fakenull, fakeabi, fakenosym, fakeinit,
//               fakemismatch (file name fakemismatch, table name "other")
// with MIXCCL_PLUGIN_PATH=FAKE_DIR_B:FAKE_DIR_A set by ctest (env is read once per process).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "adaptors/adaptor_loader.h"
#include "core/error.h"

namespace {

using mixccl::Adaptor;
using mixccl::loadAdaptor;

std::string failLoad(const std::string& name, mixcclResult_t expected) {
  const Adaptor* a = nullptr;
  EXPECT_EQ(loadAdaptor(name, &a), expected) << name;
  return mixccl::threadLastError();
}

void expectHas(const std::string& msg, const std::string& part) {
  EXPECT_NE(msg.find(part), std::string::npos) << "message: " << msg << "\nlacks: " << part;
}

std::string fakeFile(const char* dir, const std::string& name) {
  return std::string(dir) + "/libmixccl-adaptor-" + name + ".so";
}

TEST(AdaptorLoader, HostIsBuiltIn) {
  const Adaptor* a = nullptr;
  ASSERT_EQ(loadAdaptor("host", &a), mixcclSuccess);
  EXPECT_TRUE(a->builtin);
  EXPECT_EQ(a->name, "host");
  EXPECT_EQ(a->path, "built-in");
  EXPECT_EQ(a->table->memoryKind, MIXCCL_ADAPTOR_HOST_MEMORY);
  EXPECT_EQ(a->table->allReduce, nullptr);
  EXPECT_EQ(a->table->commInitRank, nullptr);
  const Adaptor* again = nullptr;
  ASSERT_EQ(loadAdaptor("host", &again), mixcclSuccess);
  EXPECT_EQ(again, a);
  // Its runtime: memory, copies, and work that is complete at once.
  const mixcclAdaptor_v1_t* t = a->table;
  void* p = nullptr;
  ASSERT_EQ(t->memAlloc(&p, 16), mixcclSuccess);
  ASSERT_EQ(t->memcpyAsync(p, "0123456789abcde", 16, mixcclCopyHostToHost, nullptr), mixcclSuccess);
  EXPECT_EQ(std::memcmp(p, "0123456789abcde", 16), 0);
  EXPECT_EQ(t->memFree(p), mixcclSuccess);
  int ran = 0;
  EXPECT_EQ(t->launchHostFunc(nullptr, [](void* x) { *static_cast<int*>(x) = 1; }, &ran),
            mixcclSuccess);
  EXPECT_EQ(ran, 1);
  void* ev = nullptr;
  int done = 0;
  ASSERT_EQ(t->eventCreate(&ev), mixcclSuccess);
  EXPECT_NE(ev, nullptr);
  EXPECT_EQ(t->eventQuery(ev, &done), mixcclSuccess);
  EXPECT_EQ(done, 1);
  EXPECT_EQ(t->setDevice(3), mixcclInvalidArgument);
  EXPECT_NE(std::string(t->lastError()).find("device 3"), std::string::npos);
}

TEST(AdaptorLoader, FirstFolderOfPluginPathWins) {
  const Adaptor* a = nullptr;
  ASSERT_EQ(loadAdaptor("fakeok", &a), mixcclSuccess) << mixccl::threadLastError();
  EXPECT_FALSE(a->builtin);
  EXPECT_EQ(a->path, fakeFile(FAKE_DIR_B, "fakeok"));
  int tag = 0, initCalls = 0;
  a->table->getDeviceCount(&tag);
  EXPECT_EQ(tag, 2);  // the copy in FAKE_DIR_B
  // Cached: same object, init() ran once.
  const Adaptor* again = nullptr;
  ASSERT_EQ(loadAdaptor("fakeok", &again), mixcclSuccess);
  EXPECT_EQ(again, a);
  a->table->getDevice(&initCalls);
  EXPECT_EQ(initCalls, 1);
}

TEST(AdaptorLoader, LaterFoldersAreSearched) {
  const Adaptor* a = nullptr;
  ASSERT_EQ(loadAdaptor("fakeonlya", &a), mixcclSuccess) << mixccl::threadLastError();
  EXPECT_EQ(a->path, fakeFile(FAKE_DIR_A, "fakeonlya"));
}

TEST(AdaptorLoader, SearchPathOrder) {
  auto dirs = mixccl::adaptorSearchPath();
  ASSERT_GE(dirs.size(), 4u);
  EXPECT_EQ(dirs[0], FAKE_DIR_B);
  EXPECT_EQ(dirs[1], FAKE_DIR_A);
  EXPECT_EQ(dirs[2], TEST_BINARY_DIR);  // where the code of the loader lives (dladdr)
  EXPECT_EQ(dirs.back(), MIXCCL_TEST_LIBDIR);
}

TEST(AdaptorLoader, NotFoundNamesEveryFileTried) {
  std::string msg = failLoad("nosuchadaptor", mixcclInvalidArgument);
  expectHas(msg, "libmixccl-adaptor-nosuchadaptor.so not found");
  expectHas(msg, fakeFile(FAKE_DIR_B, "nosuchadaptor"));
  expectHas(msg, fakeFile(FAKE_DIR_A, "nosuchadaptor"));
  expectHas(msg, fakeFile(MIXCCL_TEST_LIBDIR, "nosuchadaptor"));
}

TEST(AdaptorLoader, NullEntryIsRejected) {
  std::string msg = failLoad("fakenull", mixcclInvalidArgument);
  expectHas(msg, fakeFile(FAKE_DIR_A, "fakenull"));
  expectHas(msg, "field 'allGather' is NULL");
}

TEST(AdaptorLoader, WrongAbiVersionIsRejected) {
  std::string msg = failLoad("fakeabi", mixcclInvalidArgument);
  expectHas(msg, fakeFile(FAKE_DIR_A, "fakeabi"));
  expectHas(msg, "abiVersion 7, this mixccl needs 1");
}

TEST(AdaptorLoader, MissingSymbolIsRejected) {
  std::string msg = failLoad("fakenosym", mixcclInvalidArgument);
  expectHas(msg, fakeFile(FAKE_DIR_A, "fakenosym"));
  expectHas(msg, "dlsym(mixcclAdaptor_v1): ");
}

TEST(AdaptorLoader, NameMismatchIsRejected) {
  std::string msg = failLoad("fakemismatch", mixcclInvalidArgument);
  expectHas(msg, "name 'other' does not match");
}

TEST(AdaptorLoader, InitFailureIsASystemErrorWithThePluginsMessage) {
  std::string msg = failLoad("fakeinit", mixcclSystemError);
  expectHas(msg, fakeFile(FAKE_DIR_A, "fakeinit"));
  expectHas(msg, "init failed: fake init failure");
  // Cached failure: same code and message again.
  EXPECT_EQ(failLoad("fakeinit", mixcclSystemError), msg);
}

TEST(AdaptorLoader, InvalidNamesAreRefused) {
  std::string msg = failLoad("../evil", mixcclInvalidArgument);
  expectHas(msg, "invalid");
  failLoad("", mixcclInvalidArgument);
}

TEST(AdaptorLoader, ConcurrentLoadsGiveOneObject) {
  const Adaptor* seen[8] = {};
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&seen, i] { loadAdaptor("fakeok", &seen[i]); });
  for (auto& th : threads) th.join();
  for (int i = 1; i < 8; ++i) EXPECT_EQ(seen[i], seen[0]);
  int initCalls = 0;
  seen[0]->table->getDevice(&initCalls);
  EXPECT_EQ(initCalls, 1);
}

TEST(AdaptorTableCheck, ReportsEachProblem) {
  const mixcclAdaptor_v1_t* host = mixccl::hostAdaptorTable();
  // The host table has NULL collectives: the plugin check must say so (it applies to plugins).
  EXPECT_EQ(mixccl::checkAdaptorTable(host, "host"), "field 'supports' is NULL");
  mixcclAdaptor_v1_t t = *host;
  EXPECT_EQ(mixccl::checkAdaptorTable(nullptr, "x"), "the adaptor table is NULL");
  t.abiVersion = 2;
  EXPECT_EQ(mixccl::checkAdaptorTable(&t, "host"), "abiVersion 2, this mixccl needs 1");
  t.abiVersion = MIXCCL_ADAPTOR_ABI_VERSION;
  t.name = nullptr;
  EXPECT_EQ(mixccl::checkAdaptorTable(&t, "host"), "field 'name' is NULL");
  t.name = "host";
  t.memoryKind = 5;
  EXPECT_NE(mixccl::checkAdaptorTable(&t, "host").find("memoryKind 5"), std::string::npos);
}

TEST(AdaptorDetection, HostWithoutAUsableNcclPlugin) {
  // No nccl plugin on this test's path (FAKE_DIR_A/B, the test's folder, the libdir unless
  // installed there): detection must answer host, and say why at INFO.
  EXPECT_EQ(mixccl::detectAdaptorName(), "host");
}

}  // namespace
