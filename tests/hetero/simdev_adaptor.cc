// simdev: a simulated device adaptor for CPU-only CI. It behaves like a GPU runtime where it
// matters to mixccl's device path:
//  - "device pointers" are host allocations with bit 62 set: a non-canonical address, so any
//    host code that dereferences one faults at once instead of silently working;
//  - every stream is a worker thread running its queue in order (copies, host functions,
//    event records, waits), so work is asynchronous and ordered exactly as on a real stream;
//  - there is no native library (in a job with several domains mixccl stages device memory
//    through host buffers and never calls one; alone, mixccl refuses the job at init).
// Not shipped: built by tests/hetero for the device-staging tests.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "../../plugins/adaptors/common/plugin_support.h"
#include "../../plugins/adaptors/common/table_entries.h"

namespace {

using mixccl_plugin::setError;
const char* kPrefix = "simdev adaptor";
constexpr uintptr_t kDeviceTag = uintptr_t(1) << 62;

bool isDevice(const void* p) { return (reinterpret_cast<uintptr_t>(p) & kDeviceTag) != 0; }
void* untag(const void* p) { return reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(p) & ~kDeviceTag); }
void* tag(void* p) { return reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(p) | kDeviceTag); }

class Stream {
 public:
  Stream() : thread_([this] { run(); }) {}
  ~Stream() {
    {
      std::lock_guard<std::mutex> lock(m_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void enqueue(std::function<void()> fn) {
    {
      std::lock_guard<std::mutex> lock(m_);
      q_.push_back(std::move(fn));
      ++enqueued_;
    }
    cv_.notify_all();
  }
  // Waits until everything enqueued so far has run.
  void synchronize() {
    std::unique_lock<std::mutex> lock(m_);
    uint64_t target = enqueued_;
    cv_.wait(lock, [&] { return finished_ >= target; });
  }

 private:
  void run() {
    std::unique_lock<std::mutex> lock(m_);
    for (;;) {
      cv_.wait(lock, [&] { return stop_ || !q_.empty(); });
      if (q_.empty()) return;
      std::function<void()> fn = std::move(q_.front());
      q_.pop_front();
      lock.unlock();
      fn();
      lock.lock();
      ++finished_;
      cv_.notify_all();
    }
  }
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> q_;
  uint64_t enqueued_ = 0, finished_ = 0;
  bool stop_ = false;
  std::thread thread_;
};

struct Event {
  std::mutex m;
  std::condition_variable cv;
  uint64_t recorded = 0, reached = 0;  // an event never recorded counts as complete
};

// Copies between host and device memory enqueued so far: mixccl's staging copies (and the
// test's own), which device_direct_test reads around a call through simdevHostDeviceCopies.
std::atomic<uint64_t> gHostDeviceCopies{0};

Stream& defaultStream() {
  static Stream* s = new Stream;  // lives for the process: host functions may run at exit
  return *s;
}
Stream& streamOf(void* s) { return s ? *static_cast<Stream*>(s) : defaultStream(); }

mixcclResult_t init() { return mixcclSuccess; }
mixcclResult_t getDeviceCount(int* n) { *n = 1; return mixcclSuccess; }
mixcclResult_t setDevice(int d) {
  return d == 0 ? mixcclSuccess : setError(mixcclInvalidArgument, kPrefix, "no device %d", d);
}
mixcclResult_t getDevice(int* d) { *d = 0; return mixcclSuccess; }
mixcclResult_t getPciBusId(int, char* busId, size_t len) {
  if (len) busId[0] = 0;
  return mixcclSuccess;
}
mixcclResult_t memAlloc(void** p, size_t bytes) {
  void* h = malloc(bytes ? bytes : 1);
  if (!h) return setError(mixcclSystemError, kPrefix, "out of memory (%zu bytes)", bytes);
  *p = tag(h);
  return mixcclSuccess;
}
mixcclResult_t memFree(void* p) {
  if (p && !isDevice(p)) return setError(mixcclInvalidArgument, kPrefix, "memFree of a host pointer");
  free(untag(p));
  return mixcclSuccess;
}
mixcclResult_t hostAlloc(void** p, size_t bytes) {
  *p = malloc(bytes ? bytes : 1);
  return *p ? mixcclSuccess : setError(mixcclSystemError, kPrefix, "out of memory");
}
mixcclResult_t hostFree(void* p) {
  if (p && isDevice(p)) return setError(mixcclInvalidArgument, kPrefix, "hostFree of a device pointer");
  free(p);
  return mixcclSuccess;
}
mixcclResult_t memcpyAsync(void* dst, const void* src, size_t bytes, mixcclAdaptorCopyKind_t kind,
                           void* stream) {
  bool dstDev = kind == mixcclCopyHostToDevice || kind == mixcclCopyDeviceToDevice;
  bool srcDev = kind == mixcclCopyDeviceToHost || kind == mixcclCopyDeviceToDevice;
  // The kind must describe the pointers: a mix-up is the bug this adaptor exists to catch.
  if (bytes && (isDevice(dst) != dstDev || isDevice(src) != srcDev))
    return setError(mixcclInvalidArgument, kPrefix,
                    "memcpyAsync kind %d does not match the pointers (dst %s, src %s)", (int)kind,
                    isDevice(dst) ? "device" : "host", isDevice(src) ? "device" : "host");
  if (kind == mixcclCopyHostToDevice || kind == mixcclCopyDeviceToHost) ++gHostDeviceCopies;
  void* d = untag(dst);
  const void* s = untag(src);
  streamOf(stream).enqueue([d, s, bytes] { if (bytes) memmove(d, s, bytes); });
  return mixcclSuccess;
}
mixcclResult_t streamCreate(void** s) { *s = new Stream; return mixcclSuccess; }
mixcclResult_t streamDestroy(void* s) { delete static_cast<Stream*>(s); return mixcclSuccess; }
mixcclResult_t streamSynchronize(void* s) { streamOf(s).synchronize(); return mixcclSuccess; }
mixcclResult_t eventCreate(void** e) { *e = new Event; return mixcclSuccess; }
mixcclResult_t eventDestroy(void* e) { delete static_cast<Event*>(e); return mixcclSuccess; }
mixcclResult_t eventRecord(void* e, void* stream) {
  Event* ev = static_cast<Event*>(e);
  uint64_t n;
  {
    std::lock_guard<std::mutex> lock(ev->m);
    n = ++ev->recorded;
  }
  streamOf(stream).enqueue([ev, n] {
    std::lock_guard<std::mutex> lock(ev->m);
    if (ev->reached < n) ev->reached = n;
    ev->cv.notify_all();
  });
  return mixcclSuccess;
}
mixcclResult_t eventQuery(void* e, int* done) {
  Event* ev = static_cast<Event*>(e);
  std::lock_guard<std::mutex> lock(ev->m);
  *done = ev->reached >= ev->recorded;
  return mixcclSuccess;
}
mixcclResult_t streamWaitEvent(void* stream, void* e) {
  Event* ev = static_cast<Event*>(e);
  uint64_t n;
  {
    std::lock_guard<std::mutex> lock(ev->m);
    n = ev->recorded;
  }
  streamOf(stream).enqueue([ev, n] {
    std::unique_lock<std::mutex> lock(ev->m);
    ev->cv.wait(lock, [&] { return ev->reached >= n; });
  });
  return mixcclSuccess;
}
mixcclResult_t launchHostFunc(void* stream, void (*fn)(void*), void* arg) {
  streamOf(stream).enqueue([fn, arg] { fn(arg); });
  return mixcclSuccess;
}

// No native library at all (its entries stay NULL): in a job with several domains mixccl
// stages device memory through host buffers and never needs one; alone, init refuses the job.
mixcclAdaptor_v2_t makeTable() {
  mixcclAdaptor_v2_t t = mixccl_plugin::tableHeader("simdev", MIXCCL_ADAPTOR_DEVICE_MEMORY, init);
  MIXCCL_DEVICE_RUNTIME_ENTRIES(t);
  return t;
}

}  // namespace

MIXCCL_EXPORT_ADAPTOR = makeTable();

// For tests (dlsym): the host<->device copies enqueued so far in this process.
extern "C" __attribute__((visibility("default"))) uint64_t simdevHostDeviceCopies() {
  return gHostDeviceCopies.load();
}
