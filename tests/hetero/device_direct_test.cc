// Device memory straight to the transport (core/device_direct.h), without a GPU: forked ranks on
// the simulated device adaptor simdev next to a host rank, over sockets, with a transport double
// in front of some ranks' connections that declares device-memory capability (and reaches
// simdev's device memory the way a GPUDirect NIC reaches GPU memory: simdev device pointers
// are host memory with bit 62 set). Each rank asserts through mixcclCommInspect the per-pair
// verdict, counts the staging copies (simdev's host<->device copies) each call enqueues, counts
// the device buffers the double was handed, and checks every result.
//   device_direct_test both   every rank has the double: simdev ranks move AllGather, Gather
//                             and Scatter without staging; AllReduce still stages
//   device_direct_test one    only rank 0 has it: every pair disagrees or lacks it, all stage
// MIXCCL_SIMDEV_PLUGIN names the plugin file (the same file mixccl loads, so one runtime).
#include <dlfcn.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "mixccl.h"
#include "mixccl_adaptor.h"
#include "transport/registry.h"

namespace {

using mixccl::Connection;
using mixccl::MemoryKind;
using mixccl::TransportRequest;

const char* const kAdaptors[] = {"simdev", "host", "simdev"};
constexpr int kRanks = 3;
constexpr size_t kCount = 1009;

std::atomic<long> gDeviceRequests{0};  // device buffers the double was handed
long gFailures = 0;

#define EXPECT(cond, ...)          \
  do {                             \
    if (!(cond)) {                 \
      fprintf(stderr, __VA_ARGS__); \
      fprintf(stderr, "\n");       \
      ++gFailures;                 \
    }                              \
  } while (0)

// The double: a real connection that also moves device memory. It forwards everything; a
// device buffer is turned into the host address simdev keeps behind it.
class DeviceCapableConnection : public Connection {
 public:
  explicit DeviceCapableConnection(std::unique_ptr<Connection> inner)
      : Connection(inner->peer()), inner_(std::move(inner)) {}
  const char* transportName() const override { return inner_->transportName(); }
  bool canMove(MemoryKind) const override { return true; }
  mixccl::Result start(mixccl::TransportEvents* e) override { return inner_->start(e); }
  void postSend(TransportRequest* r) override { reach(r); inner_->postSend(r); }
  void postRecv(TransportRequest* r) override { reach(r); inner_->postRecv(r); }
  void onEvent(int lane, uint32_t events) override { inner_->onEvent(lane, events); }
  bool needsPolling() const override { return inner_->needsPolling(); }
  bool poll() override { return inner_->poll(); }
  bool prepareToBlock() override { return inner_->prepareToBlock(); }
  void afterBlock() override { inner_->afterBlock(); }
  void onDoorbell() override { inner_->onDoorbell(); }
  void onControlGoodbye() override { inner_->onControlGoodbye(); }
  void goodbye() override { inner_->goodbye(); }
  void abandon() override { inner_->abandon(); }
  uint64_t bytesMoved() const override { return inner_->bytesMoved(); }
  std::string detail() const override { return inner_->detail(); }

 private:
  static void reach(TransportRequest* r) {
    if (r->memory != MemoryKind::Device) return;
    r->buf = reinterpret_cast<char*>(reinterpret_cast<uintptr_t>(r->buf) & ~(uintptr_t(1) << 62));
    ++gDeviceRequests;
  }
  std::unique_ptr<Connection> inner_;
};

struct Rank {
  mixcclComm_t comm = nullptr;
  int rank = 0;
  const mixcclAdaptor_v2_t* dev = nullptr;  // simdev's runtime on a simdev rank
  uint64_t (*copies)() = nullptr;
  void* stream = nullptr;

  void* alloc(size_t bytes) {
    void* p = nullptr;
    if (dev) dev->memAlloc(&p, bytes ? bytes : 1);
    else p = calloc(1, bytes ? bytes : 1);
    return p;
  }
  void release(void* p) { if (dev) dev->memFree(p); else free(p); }
  // Waits for the copy: h may be a temporary, gone once this returns.
  void write(void* dst, const std::vector<int32_t>& h) {
    if (dev) {
      dev->memcpyAsync(dst, h.data(), h.size() * 4, mixcclCopyHostToDevice, stream);
      dev->streamSynchronize(stream);
    } else {
      memcpy(dst, h.data(), h.size() * 4);
    }
  }
  std::vector<int32_t> read(const void* src, size_t n) {
    std::vector<int32_t> h(n);
    if (dev) {
      dev->memcpyAsync(h.data(), src, n * 4, mixcclCopyDeviceToHost, stream);
      dev->streamSynchronize(stream);
    } else {
      memcpy(h.data(), src, n * 4);
    }
    return h;
  }
  uint64_t copiesNow() const { return copies ? copies() : 0; }
};

int32_t value(int rank, size_t i) { return rank * 100000 + (int32_t)i; }

// One call: its result against want, and the staging copies it enqueued against stagingWant.
template <typename Call>
void check(Rank& k, const char* what, Call call, void* out, const std::vector<int32_t>& want,
           uint64_t stagingWant) {
  uint64_t before = k.copiesNow();
  mixcclResult_t r = call();
  uint64_t staging = k.copiesNow() - before;
  EXPECT(r == mixcclSuccess, "rank %d: %s: %s", k.rank, what, mixcclGetLastError(k.comm));
  if (k.dev)
    EXPECT(staging == stagingWant, "rank %d: %s enqueued %llu staging copies, expected %llu",
           k.rank, what, (unsigned long long)staging, (unsigned long long)stagingWant);
  std::vector<int32_t> got = k.read(out, want.size());
  for (size_t i = 0; i < want.size(); ++i)
    if (got[i] != want[i]) {
      EXPECT(0, "rank %d: %s: [%zu] = %d, expected %d", k.rank, what, i, got[i], want[i]);
      break;
    }
}

void runCollectives(Rank& k, bool direct) {
  const int n = kRanks, me = k.rank;
  // Staging copies per call on a simdev rank: none when direct, else copy-out and copy-in
  // (only those with bytes: a non-root's Gather receives nothing, a non-root's Scatter sends nothing).
  auto stagedOr0 = [&](uint64_t staged) { return direct ? 0 : staged; };
  std::vector<int32_t> mine(kCount), all(kCount * n);
  for (size_t i = 0; i < kCount; ++i) mine[i] = value(me, i);
  for (int p = 0; p < n; ++p)
    for (size_t i = 0; i < kCount; ++i) all[p * kCount + i] = value(p, i);
  void* send = k.alloc(kCount * 4);
  void* big = k.alloc(kCount * 4 * n);
  void* recv = k.alloc(kCount * 4);

  k.write(send, mine);
  check(k, "AllGather", [&] { return mixcclAllGather(send, big, kCount, mixcclInt32, k.comm, k.stream); },
        big, all, stagedOr0(2));
  // In place: this rank's block already sits in the output.
  k.write(big, std::vector<int32_t>(kCount * n, -1));
  k.write(static_cast<char*>(big) + me * kCount * 4, mine);
  check(k, "AllGather in place",
        [&] { return mixcclAllGather(static_cast<char*>(big) + me * kCount * 4, big, kCount, mixcclInt32, k.comm, k.stream); },
        big, all, stagedOr0(2));
  for (int root : {0, 2}) {
    k.write(big, std::vector<int32_t>(kCount * n, -1));
    std::string what = "Gather root " + std::to_string(root);
    check(k, what.c_str(), [&] { return mixcclGather(send, big, kCount, mixcclInt32, root, k.comm, k.stream); },
          big, me == root ? all : std::vector<int32_t>(kCount * n, -1), stagedOr0(me == root ? 2 : 1));
  }
  k.write(big, me == 2 ? all : std::vector<int32_t>(kCount * n, -1));
  std::vector<int32_t> block(all.begin() + me * kCount, all.begin() + (me + 1) * kCount);
  check(k, "Scatter root 2", [&] { return mixcclScatter(big, recv, kCount, mixcclInt32, 2, k.comm, k.stream); },
        recv, block, stagedOr0(me == 2 ? 2 : 1));
  // Reductions need arithmetic on the device: they stage either way.
  std::vector<int32_t> sum(kCount);
  for (size_t i = 0; i < kCount; ++i)
    for (int p = 0; p < n; ++p) sum[i] += value(p, i);
  check(k, "AllReduce", [&] { return mixcclAllReduce(send, recv, kCount, mixcclInt32, mixcclSum, k.comm, k.stream); },
        recv, sum, 2);
  k.release(send);
  k.release(big);
  k.release(recv);
}

std::string inspect(mixcclComm_t comm, const std::string& key) {
  char v[512] = "";
  if (mixcclCommInspect(comm, key.c_str(), v, sizeof v) != mixcclSuccess)
    return std::string("(error: ") + mixcclGetLastError(comm) + ")";
  return v;
}

int rankMain(int me, mixcclUniqueId id, bool allWrapped) {
  const bool wrapped = allWrapped || me == 0;
  if (wrapped)
    mixccl::setConnectionWrapperForTesting([](std::unique_ptr<Connection> c) {
      return std::unique_ptr<Connection>(new DeviceCapableConnection(std::move(c)));
    });
  Rank k;
  k.rank = me;
  mixcclConfig_t config = MIXCCL_CONFIG_INITIALIZER;
  config.adaptor = kAdaptors[me];
  config.netName = "socket";
  if (mixcclCommInitRankConfig(&k.comm, kRanks, id, me, &config) != mixcclSuccess) {
    fprintf(stderr, "rank %d: init failed: %s\n", me, mixcclGetLastError(nullptr));
    return 3;
  }
  if (!strcmp(kAdaptors[me], "simdev")) {
    const char* path = getenv("MIXCCL_SIMDEV_PLUGIN");
    void* h = path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : nullptr;
    k.dev = h ? (const mixcclAdaptor_v2_t*)dlsym(h, MIXCCL_ADAPTOR_SYMBOL) : nullptr;
    k.copies = h ? (uint64_t(*)())dlsym(h, "simdevHostDeviceCopies") : nullptr;
    if (!k.dev || !k.copies) {
      fprintf(stderr, "rank %d: cannot open simdev (%s): %s\n", me, path ? path : "MIXCCL_SIMDEV_PLUGIN unset", dlerror());
      return 1;
    }
    k.dev->streamCreate(&k.stream);
  }
  // The verdict per pair, the same on both ends of it.
  for (int p = 0; p < kRanks; ++p) {
    if (p == me) continue;
    const bool peerWrapped = allWrapped || p == 0;
    std::string want;
    if (wrapped && peerWrapped) want = "yes (both ends' socket connections move device memory)";
    else if (!wrapped && !peerWrapped) want = "no (neither end's socket connection moves device memory)";
    else if (!wrapped) want = "no (this rank's socket connection moves host memory only)";
    std::string got = inspect(k.comm, "device_direct." + std::to_string(p));
    const std::string tail = "'s socket connection moves host memory only)";
    if (want.empty())  // the peer lacks it; the peer's name comes first
      EXPECT(got.compare(0, 4, "no (") == 0 && got.size() > tail.size() &&
             got.compare(got.size() - tail.size(), tail.size(), tail) == 0,
             "rank %d: device_direct.%d = '%s', expected 'no (<rank %d>%s'", me, p, got.c_str(), p, tail.c_str());
    else
      EXPECT(got == want, "rank %d: device_direct.%d = '%s', expected '%s'", me, p, got.c_str(), want.c_str());
    EXPECT(inspect(k.comm, "transport." + std::to_string(p)) == "socket", "rank %d: transport.%d is not socket", me, p);
  }
  runCollectives(k, allWrapped);
  // Device buffers reached the double exactly when the simdev ranks went direct.
  if (k.dev && allWrapped)
    EXPECT(gDeviceRequests.load() > 0, "rank %d: no device buffer reached the transport", me);
  else
    EXPECT(gDeviceRequests.load() == 0, "rank %d: %ld device buffers reached the transport, expected none",
           me, gDeviceRequests.load());
  mixcclResult_t async = mixcclSuccess;
  mixcclCommGetAsyncError(k.comm, &async);
  EXPECT(async == mixcclSuccess, "rank %d: async error %d: %s", me, (int)async, mixcclGetLastError(k.comm));
  if (k.dev) k.dev->streamDestroy(k.stream);
  if (mixcclCommDestroy(k.comm) != mixcclSuccess) ++gFailures;
  printf("rank %d (%s): %ld device buffers to the transport, %ld failures\n", me, kAdaptors[me],
         gDeviceRequests.load(), gFailures);
  return gFailures ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 || (strcmp(argv[1], "both") && strcmp(argv[1], "one"))) {
    fprintf(stderr, "usage: %s both|one\n", argv[0]);
    return 2;
  }
  const bool allWrapped = !strcmp(argv[1], "both");
  mixcclUniqueId id;
  if (mixcclGetUniqueId(&id) != mixcclSuccess) {
    fprintf(stderr, "mixcclGetUniqueId: %s\n", mixcclGetLastError(nullptr));
    return 2;
  }
  fflush(stdout);
  std::vector<pid_t> pids;
  for (int r = 0; r < kRanks; ++r) {
    pid_t pid = fork();
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the test
      int rc = rankMain(r, id, allWrapped);
      fflush(stdout);
      fflush(stderr);
      _exit(rc);
    }
    pids.push_back(pid);
  }
  int failed = 0;
  for (pid_t pid : pids) {
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) failed = 1;
  }
  printf("device direct (%s): %s\n", argv[1], failed ? "FAILED" : "passed");
  return failed;
}
