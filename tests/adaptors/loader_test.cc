// The adaptor loader against fake plugins built by tests/adaptors/CMakeLists.txt:
//   FAKE_DIR_B: fakeok (getDeviceCount 2)
//   FAKE_DIR_A: fakeok (getDeviceCount 1), fakeonlya, fakeabi, fakenosym, fakeinit,
//               fakemismatch (file name fakemismatch, table name "other"), fakenoruntime,
//               fakesmall, fakenolasterror, fakedevruntime, fakehalflib, fakecollnolib
//               (version 2, fake_plugin.c), fakevone, fakevonenull (version 1)
// with MIXCCL_PLUGIN_PATH=FAKE_DIR_B:FAKE_DIR_A set by ctest (env is read once per process).
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "adaptors/adaptor_loader.h"
#include "adaptors/table_v2.h"
#include "base/error.h"

namespace {

using mixccl::Adaptor;
using mixccl::AdaptorTable;
using mixccl::CollKind;
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

// The whole message of a refused fake plugin of FAKE_DIR_A: "adaptor '<name>': <file>: <why>".
std::string refusal(const std::string& name, const std::string& why) {
  return "adaptor '" + name + "': " + fakeFile(FAKE_DIR_A, name) + ": " + why;
}

// The runtime of t is the host runtime, entry for entry (host_runtime.h), or none of it is.
bool runtimeIsHosts(const AdaptorTable* t) {
  const AdaptorTable* h = mixccl::hostAdaptorTable();
  return t->getDeviceCount == h->getDeviceCount && t->setDevice == h->setDevice &&
         t->getDevice == h->getDevice && t->getPciBusId == h->getPciBusId &&
         t->memAlloc == h->memAlloc && t->memFree == h->memFree && t->hostAlloc == h->hostAlloc &&
         t->hostFree == h->hostFree && t->memcpyAsync == h->memcpyAsync &&
         t->streamCreate == h->streamCreate && t->streamDestroy == h->streamDestroy &&
         t->streamSynchronize == h->streamSynchronize && t->eventCreate == h->eventCreate &&
         t->eventDestroy == h->eventDestroy && t->eventRecord == h->eventRecord &&
         t->eventQuery == h->eventQuery && t->streamWaitEvent == h->streamWaitEvent &&
         t->launchHostFunc == h->launchHostFunc;
}

TEST(AdaptorLoader, HostIsBuiltIn) {
  const Adaptor* a = nullptr;
  ASSERT_EQ(loadAdaptor("host", &a), mixcclSuccess);
  EXPECT_TRUE(a->builtin);
  EXPECT_EQ(a->name, "host");
  EXPECT_EQ(a->path, "built-in");
  EXPECT_EQ(a->table->memoryKind, MIXCCL_ADAPTOR_HOST_MEMORY);
  EXPECT_EQ(a->table->abiVersion, MIXCCL_ADAPTOR_ABI_VERSION);
  EXPECT_FALSE(a->table->hasNativeLibrary());
  EXPECT_EQ(a->table->allReduce, nullptr);
  EXPECT_EQ(a->table->commInitRank, nullptr);
  const Adaptor* again = nullptr;
  ASSERT_EQ(loadAdaptor("host", &again), mixcclSuccess);
  EXPECT_EQ(again, a);
  // Its runtime: memory, copies, and work that is complete at once.
  const AdaptorTable* t = a->table;
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
  EXPECT_STREQ(t->lastError(), "host runtime: device 3 does not exist (only 0)");
  EXPECT_EQ(t->setDevice(0), mixcclSuccess);
  EXPECT_STREQ(t->lastError(), "");
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

TEST(AdaptorLoader, NullRequiredEntryIsRejected) {
  EXPECT_EQ(failLoad("fakenolasterror", mixcclInvalidArgument),
            refusal("fakenolasterror", "field 'lastError' is NULL"));
}

TEST(AdaptorLoader, WrongAbiVersionIsRejected) {
  EXPECT_EQ(failLoad("fakeabi", mixcclInvalidArgument),
            refusal("fakeabi", "abiVersion 7, this mixccl needs 2"));
}

TEST(AdaptorLoader, TableSmallerThanVersion2IsRejected) {
  EXPECT_EQ(failLoad("fakesmall", mixcclInvalidArgument),
            refusal("fakesmall", "size 16 is smaller than a version 2 table (" +
                                     std::to_string(offsetof(mixcclAdaptor_v2_t, commGetAsyncError)) +
                                     " bytes): not built against mixccl_adaptor.h version 2"));
}

TEST(AdaptorLoader, DeviceMemoryNeedsItsWholeRuntime) {
  // fakedevruntime sets getDeviceCount and getDevice only: setDevice is the first one missing.
  EXPECT_EQ(failLoad("fakedevruntime", mixcclInvalidArgument),
            refusal("fakedevruntime", "field 'setDevice' is NULL (an adaptor of device memory "
                                      "sets its whole device runtime)"));
}

TEST(AdaptorLoader, NativeLibraryIsAllOrNothing) {
  EXPECT_EQ(failLoad("fakehalflib", mixcclInvalidArgument),
            refusal("fakehalflib", "field 'supports' is NULL but 'commInitRank' is set (the "
                                   "native library entries supports, getUniqueId, commInitRank, "
                                   "commDestroy and commAbort are set together)"));
  EXPECT_EQ(failLoad("fakecollnolib", mixcclInvalidArgument),
            refusal("fakecollnolib", "field 'allReduce' is set but the native library entries "
                                     "(supports, getUniqueId, commInitRank, commDestroy, "
                                     "commAbort) are NULL"));
}

TEST(AdaptorLoader, MissingSymbolIsRejected) {
  std::string msg = failLoad("fakenosym", mixcclInvalidArgument);
  expectHas(msg, fakeFile(FAKE_DIR_A, "fakenosym"));
  expectHas(msg, "dlsym(mixcclAdaptor_v2): ");
  expectHas(msg, "undefined symbol: mixcclAdaptor_v2");
  expectHas(msg, "; no mixcclAdaptor_v1 (ABI version 1) either");
}

// A host-memory plugin that sets no runtime entry at all runs on mixccl's host runtime.
TEST(AdaptorLoader, HostMemoryPluginWithoutRuntimeGetsTheHostRuntime) {
  const Adaptor* a = nullptr;
  ASSERT_EQ(loadAdaptor("fakenoruntime", &a), mixcclSuccess) << mixccl::threadLastError();
  const AdaptorTable* t = a->table;
  EXPECT_TRUE(t->hostRuntimeFilled);
  EXPECT_TRUE(runtimeIsHosts(t));
  EXPECT_FALSE(t->hasNativeLibrary());
  EXPECT_FALSE(t->hasPointToPoint());
  int count = 0;
  ASSERT_EQ(t->getDeviceCount(&count), mixcclSuccess);
  EXPECT_EQ(count, 1);
  void* p = nullptr;
  ASSERT_EQ(t->hostAlloc(&p, 8), mixcclSuccess);
  ASSERT_EQ(t->memcpyAsync(p, "1234567", 8, mixcclCopyHostToHost, nullptr), mixcclSuccess);
  EXPECT_STREQ(static_cast<char*>(p), "1234567");
  EXPECT_EQ(t->hostFree(p), mixcclSuccess);
  // A failure of the filled-in runtime is reported as the runtime's, not as the plugin's.
  EXPECT_EQ(t->setDevice(2), mixcclInvalidArgument);
  EXPECT_STREQ(t->lastError(), "host runtime: device 2 does not exist (only 0)");
  EXPECT_EQ(t->getDevice(&count), mixcclSuccess);
  EXPECT_STREQ(t->lastError(), "");
}

// Entries a host-memory plugin sets stay its own; only the NULL ones are filled.
TEST(AdaptorLoader, HostRuntimeFillsOnlyTheEntriesLeftNull) {
  const Adaptor* a = nullptr;
  ASSERT_EQ(loadAdaptor("fakeonlya", &a), mixcclSuccess) << mixccl::threadLastError();
  const AdaptorTable* h = mixccl::hostAdaptorTable();
  EXPECT_NE(a->table->getDeviceCount, h->getDeviceCount);
  EXPECT_NE(a->table->getDevice, h->getDevice);
  EXPECT_EQ(a->table->setDevice, h->setDevice);
  EXPECT_EQ(a->table->launchHostFunc, h->launchHostFunc);
}

TEST(AdaptorLoader, Version1PluginStillLoads) {
  const Adaptor* a = nullptr;
  ASSERT_EQ(loadAdaptor("fakevone", &a), mixcclSuccess) << mixccl::threadLastError();
  const AdaptorTable* t = a->table;
  EXPECT_EQ(t->abiVersion, 1);
  EXPECT_FALSE(t->hostRuntimeFilled);
  int count = 0;
  ASSERT_EQ(t->getDeviceCount(&count), mixcclSuccess);
  EXPECT_EQ(count, 11);  // the plugin's own runtime
  EXPECT_TRUE(t->hasNativeLibrary());
  EXPECT_TRUE(t->hasPointToPoint());
  // Version 1 had no AlltoAll/Gather/Scatter entries: mixccl composes them.
  EXPECT_EQ(t->alltoAll, nullptr);
  EXPECT_EQ(t->gather, nullptr);
  EXPECT_EQ(t->scatter, nullptr);
  EXPECT_FALSE(t->hasNative(CollKind::AlltoAll));
  // Its supports() takes names: "allreduce" is the one it says yes to.
  EXPECT_TRUE(t->supports(CollKind::AllReduce, mixcclFloat32, mixcclSum));
  EXPECT_FALSE(t->supports(CollKind::AllGather, mixcclFloat32, mixcclSum));
  EXPECT_FALSE(t->supports(CollKind::AlltoAll, mixcclFloat32, mixcclSum));
}

TEST(AdaptorLoader, Version1NullEntryIsRejected) {
  EXPECT_EQ(failLoad("fakevonenull", mixcclInvalidArgument),
            refusal("fakevonenull", "field 'allGather' is NULL"));
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
  mixcclAdaptor_v2_t v;
  std::memset(&v, 0, sizeof v);
  v.size = sizeof v;
  v.abiVersion = MIXCCL_ADAPTOR_ABI_VERSION;
  v.name = "x";
  v.memoryKind = MIXCCL_ADAPTOR_HOST_MEMORY;
  v.init = [] { return mixcclSuccess; };
  v.lastError = [] { return ""; };
  AdaptorTable out;
  out.name = "untouched";
  EXPECT_EQ(mixccl::adaptorTableFromV2(nullptr, "x", &out), "the adaptor table is NULL");
  mixcclAdaptor_v2_t t = v;
  t.abiVersion = 3;
  EXPECT_EQ(mixccl::adaptorTableFromV2(&t, "x", &out), "abiVersion 3, this mixccl needs 2");
  t = v;
  t.name = nullptr;
  EXPECT_EQ(mixccl::adaptorTableFromV2(&t, "x", &out), "field 'name' is NULL");
  t = v;
  t.memoryKind = 5;
  EXPECT_EQ(mixccl::adaptorTableFromV2(&t, "x", &out), "memoryKind 5 is not 0 (host) or 1 (device)");
  t = v;
  t.init = nullptr;
  EXPECT_EQ(mixccl::adaptorTableFromV2(&t, "x", &out), "field 'init' is NULL");
  t = v;
  t.send = [](const void*, size_t, mixcclDataType_t, int, void*, void*) { return mixcclSuccess; };
  EXPECT_EQ(mixccl::adaptorTableFromV2(&t, "x", &out),
            "field 'recv' is NULL but 'send' is set (send, recv, groupStart and groupEnd "
            "are set together)");
  t = v;
  t.commDeregister = [](void*, void*) { return mixcclSuccess; };
  EXPECT_EQ(mixccl::adaptorTableFromV2(&t, "x", &out),
            "field 'commRegister' is NULL but 'commDeregister' is set (commRegister and "
            "commDeregister are set together)");
  EXPECT_STREQ(out.name, "untouched");  // refused tables are never copied
  EXPECT_EQ(mixccl::adaptorTableFromV2(&v, "x", &out), "");
  EXPECT_STREQ(out.name, "x");
}

// A plugin built against a later header (entries appended) has a larger table: it loads, and
// the entries this mixccl does not know are ignored.
TEST(AdaptorTableCheck, LargerTableOfALaterHeaderIsAccepted) {
  struct Later {
    mixcclAdaptor_v2_t v2;
    void* laterEntries[4];
  } later;
  std::memset(&later, 0xff, sizeof later);  // the unknown entries are garbage
  std::memset(&later.v2, 0, sizeof later.v2);
  later.v2.size = sizeof later;
  later.v2.abiVersion = MIXCCL_ADAPTOR_ABI_VERSION;
  later.v2.name = "later";
  later.v2.memoryKind = MIXCCL_ADAPTOR_HOST_MEMORY;
  later.v2.init = [] { return mixcclSuccess; };
  later.v2.lastError = [] { return ""; };
  AdaptorTable out;
  EXPECT_EQ(mixccl::adaptorTableFromV2(&later.v2, "later", &out), "");
  EXPECT_TRUE(runtimeIsHosts(&out));
}

// A plugin built against the first version 2 header ends at groupEnd: it loads, and the
// entries appended since are NULL whatever lies beyond its table.
TEST(AdaptorTableCheck, FirstVersion2TableLeavesAppendedEntriesNull) {
  mixcclAdaptor_v2_t first;
  std::memset(&first, 0xff, sizeof first);  // what follows a shorter table is garbage
  const size_t firstSize = offsetof(mixcclAdaptor_v2_t, commGetAsyncError);
  std::memset(&first, 0, firstSize);
  first.size = firstSize;
  first.abiVersion = MIXCCL_ADAPTOR_ABI_VERSION;
  first.name = "first";
  first.memoryKind = MIXCCL_ADAPTOR_HOST_MEMORY;
  first.init = [] { return mixcclSuccess; };
  first.lastError = [] { return ""; };
  first.supports = [](mixcclAdaptorColl_t, mixcclDataType_t, mixcclRedOp_t) { return 1; };
  first.getUniqueId = [](void*) { return mixcclSuccess; };
  first.commInitRank = [](void**, int, const void*, int, int, const mixcclAdaptorServices_t*) {
    return mixcclSuccess;
  };
  first.commDestroy = [](void*) { return mixcclSuccess; };
  first.commAbort = [](void*) { return mixcclSuccess; };
  AdaptorTable out;
  EXPECT_EQ(mixccl::adaptorTableFromV2(&first, "first", &out), "");
  EXPECT_EQ(out.commGetAsyncError, nullptr);
  EXPECT_EQ(out.commRegister, nullptr);
  EXPECT_EQ(out.commDeregister, nullptr);
}

// A table of the header before commRegister (it ends after commGetAsyncError) loads too, its
// registration entries NULL; a full table's registration entries are copied with its library.
TEST(AdaptorTableCheck, RegistrationEntriesFollowTheTableSize) {
  mixcclAdaptor_v2_t v;
  std::memset(&v, 0xff, sizeof v);  // what follows a shorter table is garbage
  const size_t asyncSize = offsetof(mixcclAdaptor_v2_t, commRegister);
  std::memset(&v, 0, asyncSize);
  v.size = asyncSize;
  v.abiVersion = MIXCCL_ADAPTOR_ABI_VERSION;
  v.name = "reg";
  v.memoryKind = MIXCCL_ADAPTOR_HOST_MEMORY;
  v.init = [] { return mixcclSuccess; };
  v.lastError = [] { return ""; };
  v.supports = [](mixcclAdaptorColl_t, mixcclDataType_t, mixcclRedOp_t) { return 1; };
  v.getUniqueId = [](void*) { return mixcclSuccess; };
  v.commInitRank = [](void**, int, const void*, int, int, const mixcclAdaptorServices_t*) {
    return mixcclSuccess;
  };
  v.commDestroy = [](void*) { return mixcclSuccess; };
  v.commAbort = [](void*) { return mixcclSuccess; };
  AdaptorTable out;
  ASSERT_EQ(mixccl::adaptorTableFromV2(&v, "reg", &out), "");
  EXPECT_EQ(out.commRegister, nullptr);
  EXPECT_EQ(out.commDeregister, nullptr);
  v.size = sizeof v;
  v.commGetAsyncError = nullptr;
  v.commRegister = [](void*, void*, size_t, void** h) { *h = nullptr; return mixcclSuccess; };
  v.commDeregister = [](void*, void*) { return mixcclSuccess; };
  ASSERT_EQ(mixccl::adaptorTableFromV2(&v, "reg", &out), "");
  EXPECT_EQ(out.commRegister, v.commRegister);
  EXPECT_EQ(out.commDeregister, v.commDeregister);
}

TEST(AdaptorDetection, HostWithoutAUsableNcclPlugin) {
  // No nccl plugin on this test's path (FAKE_DIR_A/B, the test's folder, the libdir unless
  // installed there): detection must answer host, and say why at INFO.
  EXPECT_EQ(mixccl::detectAdaptorName(), "host");
}

}  // namespace
