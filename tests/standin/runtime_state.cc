#include "runtime_state.h"

#include <pthread.h>

#include <atomic>
#include <cstdio>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

namespace standin {
namespace {

thread_local cudaError_t tLastError = cudaSuccess;
thread_local bool tInHostFunction = false;
std::atomic<int> gSticky{0};

// Stream threads do not survive fork: a child of a process whose runtime had started them
// gets cudaErrorInitializationError from every call, as CUDA refuses a forked child.
std::atomic<bool> gThreadsStarted{false};
bool gForkedAfterStart = false;
void noteFork() { gForkedAfterStart = gThreadsStarted.load(); }
const int gAtFork = pthread_atfork(nullptr, nullptr, noteFork);

// Never destroyed: detached stream workers use it until the process ends.
struct Registry {
  std::mutex m;
  std::shared_ptr<StreamWorker> legacy = StreamWorker::start(StreamWorker::Kind::Legacy);
  std::map<cudaStream_t, std::shared_ptr<StreamWorker>> streams;
  std::map<cudaEvent_t, std::shared_ptr<EventState>> events;
};
Registry& registry() {
  static Registry* r = [] {
    gThreadsStarted = true;
    return new Registry;
  }();
  return *r;
}

// The default-stream handles CUDA defines; the per-thread default stream is run as the legacy
// one (documented limitation of the stand-in).
bool isDefaultStream(cudaStream_t s) {
  return s == nullptr || s == cudaStreamLegacy || s == cudaStreamPerThread;
}

}  // namespace

FaultPlan& callFaults() {
  static FaultPlan* p = new FaultPlan("MIXCCL_STANDIN_CUDA_FAIL");
  return *p;
}
FaultPlan& asyncFaults() {
  static FaultPlan* p = new FaultPlan("MIXCCL_STANDIN_CUDA_ASYNC_FAIL");
  return *p;
}

cudaError_t fail(cudaError_t e) {
  if (e != cudaSuccess) tLastError = e;  // a call that succeeds leaves the last error alone
  return e;
}
cudaError_t takeLastError() {
  cudaError_t e = tLastError;
  tLastError = stickyError();
  return e;
}
cudaError_t peekLastError() { return tLastError; }
cudaError_t stickyError() { return static_cast<cudaError_t>(gSticky.load()); }

cudaError_t usable() {
  if (gForkedAfterStart) return cudaErrorInitializationError;
  return stickyError();
}

cudaError_t enter(const char* name) {
  if (gForkedAfterStart) {
    static std::once_flag once;
    std::call_once(once, [] {
      std::fprintf(stderr, "stand-in runtime: used in a child forked after its parent started the runtime "
                           "(CUDA refuses this too): cudaErrorInitializationError\n");
    });
    return fail(cudaErrorInitializationError);
  }
  if (tInHostFunction) {
    std::fprintf(stderr, "stand-in runtime: %s called from a host function (CUDA forbids it): "
                         "cudaErrorNotPermitted\n", name);
    return fail(cudaErrorNotPermitted);
  }
  if (cudaError_t e = stickyError()) return fail(e);
  if (int code = callFaults().check(name)) return fail(static_cast<cudaError_t>(code));
  return cudaSuccess;
}

std::shared_ptr<StreamWorker> streamOf(cudaStream_t s) {
  Registry& r = registry();
  if (isDefaultStream(s)) return r.legacy;
  std::lock_guard<std::mutex> lock(r.m);
  auto it = r.streams.find(s);
  return it == r.streams.end() ? nullptr : it->second;
}

cudaStream_t addStream(StreamWorker::Kind kind) {
  std::shared_ptr<StreamWorker> w = StreamWorker::start(kind);
  auto handle = reinterpret_cast<cudaStream_t>(w.get());
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.m);
  r.streams[handle] = std::move(w);
  return handle;
}

bool removeStream(cudaStream_t s) {
  Registry& r = registry();
  std::shared_ptr<StreamWorker> w;
  {
    std::lock_guard<std::mutex> lock(r.m);
    auto it = r.streams.find(s);
    if (it == r.streams.end()) return false;
    w = std::move(it->second);
    r.streams.erase(it);
  }
  w->stop();  // the work already enqueued still runs
  return true;
}

std::shared_ptr<EventState> eventOf(cudaEvent_t e) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.m);
  auto it = r.events.find(e);
  return it == r.events.end() ? nullptr : it->second;
}

cudaEvent_t addEvent() {
  auto ev = std::make_shared<EventState>();
  auto handle = reinterpret_cast<cudaEvent_t>(ev.get());
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.m);
  r.events[handle] = std::move(ev);
  return handle;
}

bool removeEvent(cudaEvent_t e) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.m);
  return r.events.erase(e) == 1;  // pending records and waits hold their own reference
}

cudaError_t enqueueOp(cudaStream_t s, const char* kind, std::function<void(bool)> op,
                      std::shared_ptr<StreamWorker>* worker, uint64_t* ticket) {
  std::shared_ptr<StreamWorker> w = streamOf(s);
  if (!w) return cudaErrorInvalidResourceHandle;
  Registry& r = registry();
  // Taken under the registry lock, so every stream's tickets and the waits between the legacy
  // stream and the blocking streams follow one order (no cycle of waits).
  std::lock_guard<std::mutex> lock(r.m);
  std::vector<std::pair<std::shared_ptr<StreamWorker>, uint64_t>> after;
  if (w->kind() == StreamWorker::Kind::Legacy) {
    for (auto& e : r.streams)
      if (e.second->kind() == StreamWorker::Kind::Blocking)
        after.emplace_back(e.second, e.second->lastTicket());
  } else if (w->kind() == StreamWorker::Kind::Blocking) {
    after.emplace_back(r.legacy, r.legacy->lastTicket());
  }
  uint64_t t = w->enqueue([after = std::move(after), kind, op = std::move(op)] {
    for (auto& a : after) a.first->waitFinished(a.second);
    bool skipped = stickyError() != cudaSuccess;
    if (!skipped && kind != nullptr) {
      if (int code = asyncFaults().check(kind)) {
        gSticky.store(code);
        std::fprintf(stderr, "stand-in runtime: injected asynchronous error %d in a %s operation (%s)\n",
                     code, kind, asyncFaults().text().c_str());
        skipped = true;
      }
    }
    op(skipped);
  });
  if (worker) *worker = w;
  if (ticket) *ticket = t;
  return cudaSuccess;
}

void synchronizeAll() {
  std::vector<std::pair<std::shared_ptr<StreamWorker>, uint64_t>> all;
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.m);
    all.emplace_back(r.legacy, r.legacy->lastTicket());
    for (auto& e : r.streams) all.emplace_back(e.second, e.second->lastTicket());
  }
  for (auto& a : all) a.first->waitFinished(a.second);
}

bool inHostFunction() { return tInHostFunction; }
void setInHostFunction(bool on) { tInHostFunction = on; }

}  // namespace standin
