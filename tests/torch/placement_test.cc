// The ordering decisions of the torch backend's CUDA support (plugins/torch/csrc/placement.h),
// checked on the CPU: each route's worker and wait steps are played on a small model of CUDA
// streams (FIFO queues of effects, event records and event waits, run by a scheduler that
// always advances the backend's internal stream first, the way a fast GPU would), and the
// order in which the effects happened is compared with what a correct program needs. Each
// case runs twice: with the internal stream always advanced first (a collective that does not
// wait for its input runs ahead of the producer) and with the caller's stream first (a consumer
// that does not wait for the collective runs ahead of it).
#include "../../plugins/torch/csrc/placement.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace mixccl_torch {
namespace {

// A model of streams and events with CUDA's rules: a stream runs its queue in order; a wait on
// an event blocks the stream until the event's last enqueued record has run (a wait on an event
// never recorded passes at once).
class StreamModel {
 public:
  explicit StreamModel(std::vector<std::string> priority) : priority_(std::move(priority)) {}
  struct Op {
    enum Kind { kEffect, kRecord, kWait } kind;
    std::string name;  // the effect, or the event
  };
  void enqueue(const std::string& stream, Op op) {
    if (op.kind == Op::kRecord) ++recordsEnqueued_[op.name];
    streams_[stream].push_back(op);
  }
  void effect(const std::string& stream, const std::string& what) {
    enqueue(stream, {Op::kEffect, what});
  }
  void record(const std::string& stream, const std::string& event) {
    enqueue(stream, {Op::kRecord, event});
  }
  void wait(const std::string& stream, const std::string& event) {
    // The wait captures the records enqueued so far, as cudaStreamWaitEvent does.
    enqueue(stream, {Op::kWait, event + "#" + std::to_string(recordsEnqueued_[event])});
  }
  void hostEffect(const std::string& what) { happened_.push_back(what); }

  // Runs streams until none can advance, the first of priority_ that can going first.
  void run() {
    for (bool progress = true; progress;) {
      progress = false;
      for (const std::string& s : priority_) {
        if (step(s)) {
          progress = true;
          break;
        }
      }
    }
  }
  // Runs until effect `what` has happened (a host thread blocking on the stream).
  void runUntil(const std::string& what) {
    while (!happened(what)) {
      size_t before = happened_.size() + recordsRun();
      run();
      ASSERT_NE(before, happened_.size() + recordsRun()) << "blocked before " << what;
    }
  }
  bool happened(const std::string& what) const {
    for (const std::string& h : happened_)
      if (h == what) return true;
    return false;
  }
  // Position of an effect in the order things happened (-1: never).
  int at(const std::string& what) const {
    for (size_t i = 0; i < happened_.size(); ++i)
      if (happened_[i] == what) return static_cast<int>(i);
    return -1;
  }

 private:
  size_t recordsRun() const {
    size_t n = 0;
    for (const auto& r : recordsRun_) n += r.second;
    return n;
  }
  bool step(const std::string& stream) {
    std::deque<Op>& q = streams_[stream];
    if (q.empty()) return false;
    Op op = q.front();
    if (op.kind == Op::kWait) {
      std::string event = op.name.substr(0, op.name.find('#'));
      int needed = std::stoi(op.name.substr(op.name.find('#') + 1));
      if (recordsRun_[event] < needed) return false;
    } else if (op.kind == Op::kRecord) {
      ++recordsRun_[op.name];
    } else {
      happened_.push_back(op.name);
    }
    q.pop_front();
    return true;
  }
  std::vector<std::string> priority_;
  std::map<std::string, std::deque<Op>> streams_;
  std::map<std::string, int> recordsEnqueued_, recordsRun_;
  std::vector<std::string> happened_;
};

// Plays one operation of route `p` the way op_order.cc and work.cc carry it out, on a tensor
// the caller produced on a side stream (for CUDA tensors) and reads after wait().
void playOperation(StreamModel& m, const Placement& p, const std::vector<WaitStep>& waits) {
  const bool cuda = p.orderedAfterCaller;
  if (cuda) {
    // The producer: written on a side stream, which the caller's current stream waits for.
    m.effect("side", "producer writes x");
    m.record("side", "side done");
    m.wait("caller", "side done");
    m.record("caller", "ready");  // FenceSource::issue on the caller's thread
  } else {
    m.hostEffect("producer writes x");
  }
  // The worker.
  for (WorkerStep step : p.workerSteps) {
    switch (step) {
      case WorkerStep::kUseInternalStream: break;
      case WorkerStep::kInternalWaitsReady: m.wait("internal", "ready"); break;
      case WorkerStep::kRunOperation:
        if (p.route == Route::kHostStaged) {
          // CommBuffer: a blocking copy to pinned memory, the host collective, the copy back.
          m.effect("internal", "copy in");
          m.runUntil("copy in");
          m.hostEffect("collective reads x");
          m.effect("internal", "copy out");
        } else if (p.route == Route::kHostDirect) {
          m.hostEffect("collective reads x");
        } else {
          m.effect("internal", "collective reads x");
        }
        break;
      case WorkerStep::kRecordEnd: m.record("internal", "end"); break;
      case WorkerStep::kHostWaitsEnd:
        m.effect("internal", "end passed");
        m.runUntil("end passed");
        break;
      case WorkerStep::kCompleteWork: m.hostEffect("work completes"); break;
    }
  }
  // The caller: wait(), then a read of the result.
  for (WaitStep step : waits) {
    switch (step) {
      case WaitStep::kHostWaitsWorker: ASSERT_TRUE(m.happened("work completes")); break;
      case WaitStep::kCurrentWaitsEnd: m.wait("caller", "end"); break;
      case WaitStep::kHostWaitsEnd: m.runUntil("end passed"); break;
    }
  }
  if (cuda) m.effect("caller", "consumer reads result");
  else m.hostEffect("consumer reads result");
  m.run();
}

const std::vector<std::string> kInternalFirst{"internal", "caller", "side"};
const std::vector<std::string> kCallerFirst{"caller", "side", "internal"};

void expectOrdered(const Placement& p, const std::vector<std::string>& priority) {
  StreamModel m(priority);
  playOperation(m, p, waitSteps(p, false));
  SCOPED_TRACE(std::string(routeName(p.route)) + ", " + priority[0] + " stream first");
  ASSERT_GE(m.at("producer writes x"), 0);
  ASSERT_GE(m.at("collective reads x"), 0);
  ASSERT_GE(m.at("consumer reads result"), 0);
  EXPECT_LT(m.at("producer writes x"), m.at("collective reads x"));
  EXPECT_LT(m.at("collective reads x"), m.at("consumer reads result"));
  if (p.route == Route::kHostStaged) {
    EXPECT_LT(m.at("copy out"), m.at("consumer reads result"));
  }
}

TEST(TorchPlacement, RoutesByTensorAndAdaptorMemory) {
  EXPECT_EQ(placementFor(TensorHome::kCpu, CommMemory::kHost).route, Route::kHostDirect);
  EXPECT_EQ(placementFor(TensorHome::kNone, CommMemory::kHost).route, Route::kHostDirect);
  EXPECT_EQ(placementFor(TensorHome::kCuda, CommMemory::kHost).route, Route::kHostStaged);
  EXPECT_EQ(placementFor(TensorHome::kCuda, CommMemory::kDevice).route, Route::kDeviceDirect);
  EXPECT_EQ(placementFor(TensorHome::kCpu, CommMemory::kDevice).route, Route::kDeviceStaged);
  EXPECT_EQ(placementFor(TensorHome::kNone, CommMemory::kDevice).route, Route::kDeviceStaged);
}

TEST(TorchPlacement, CpuTensorsOnHostAdaptorsNeverTouchCuda) {
  for (TensorHome home : {TensorHome::kCpu, TensorHome::kNone}) {
    Placement p = placementFor(home, CommMemory::kHost);
    EXPECT_FALSE(p.usesCuda);
    EXPECT_FALSE(p.buffersOnDevice);
    EXPECT_TRUE(p.hostCompletes);
    EXPECT_EQ(p.workerSteps,
              (std::vector<WorkerStep>{WorkerStep::kRunOperation, WorkerStep::kCompleteWork}));
    EXPECT_EQ(waitSteps(p, false), std::vector<WaitStep>{WaitStep::kHostWaitsWorker});
    EXPECT_TRUE(synchronizeSteps(p).empty());  // as c10d::Work's for CPU tensors
    EXPECT_FALSE(completionQueriesEnd(p));
  }
}

TEST(TorchPlacement, DeviceAdaptorGetsDevicePointersOnTheInternalStream) {
  Placement p = placementFor(TensorHome::kCuda, CommMemory::kDevice);
  EXPECT_TRUE(p.buffersOnDevice);
  EXPECT_TRUE(p.orderedAfterCaller);
  EXPECT_FALSE(p.hostCompletes);
  // wait() orders the caller's stream and does not block the host on the device.
  EXPECT_EQ(waitSteps(p, false),
            (std::vector<WaitStep>{WaitStep::kHostWaitsWorker, WaitStep::kCurrentWaitsEnd}));
  EXPECT_EQ(synchronizeSteps(p), waitSteps(p, false));
  // With its own timeout, as ProcessGroupNCCL, wait() blocks until the device is done.
  EXPECT_EQ(waitSteps(p, true),
            (std::vector<WaitStep>{WaitStep::kHostWaitsWorker, WaitStep::kHostWaitsEnd}));
  EXPECT_TRUE(completionQueriesEnd(p));
  // The Work completes after the end event is recorded, with the internal stream current (a
  // CUDA-aware Future records its events there).
  const std::vector<WorkerStep>& s = p.workerSteps;
  ASSERT_EQ(s.front(), WorkerStep::kUseInternalStream);
  auto pos = [&](WorkerStep w) { return std::find(s.begin(), s.end(), w) - s.begin(); };
  EXPECT_LT(pos(WorkerStep::kInternalWaitsReady), pos(WorkerStep::kRunOperation));
  EXPECT_LT(pos(WorkerStep::kRunOperation), pos(WorkerStep::kRecordEnd));
  EXPECT_LT(pos(WorkerStep::kRecordEnd), pos(WorkerStep::kCompleteWork));
  EXPECT_EQ(pos(WorkerStep::kHostWaitsEnd), static_cast<long>(s.size()));  // absent
}

TEST(TorchPlacement, CpuTensorsOnADeviceAdaptorCompleteOnTheHost) {
  Placement p = placementFor(TensorHome::kCpu, CommMemory::kDevice);
  EXPECT_TRUE(p.usesCuda);
  EXPECT_TRUE(p.buffersOnDevice);
  EXPECT_FALSE(p.orderedAfterCaller);
  EXPECT_TRUE(p.hostCompletes);
  EXPECT_EQ(waitSteps(p, false), std::vector<WaitStep>{WaitStep::kHostWaitsWorker});
}

// A side-stream producer, the operation, a consumer after wait(): in order on every route.
TEST(TorchPlacement, EveryRouteOrdersProducerOperationConsumer) {
  for (TensorHome home : {TensorHome::kCpu, TensorHome::kCuda})
    for (CommMemory memory : {CommMemory::kHost, CommMemory::kDevice})
      for (const auto& priority : {kInternalFirst, kCallerFirst})
        expectOrdered(placementFor(home, memory), priority);
}

// The model catches a plan without the wait on the caller's event: the internal stream runs
// ahead of the side-stream producer.
TEST(TorchPlacement, ModelCatchesAMissingWaitOnTheCaller) {
  Placement p = placementFor(TensorHome::kCuda, CommMemory::kDevice);
  p.workerSteps.erase(std::find(p.workerSteps.begin(), p.workerSteps.end(),
                                WorkerStep::kInternalWaitsReady));
  StreamModel m(kInternalFirst);
  playOperation(m, p, waitSteps(p, false));
  EXPECT_GT(m.at("producer writes x"), m.at("collective reads x"));
}

// ... and a wait() that does not order the caller's stream: the consumer reads too early.
TEST(TorchPlacement, ModelCatchesAWaitThatDoesNotOrderTheCaller) {
  Placement p = placementFor(TensorHome::kCuda, CommMemory::kDevice);
  StreamModel m(kCallerFirst);
  playOperation(m, p, {WaitStep::kHostWaitsWorker});
  EXPECT_LT(m.at("consumer reads result"), m.at("collective reads x"));
}

}  // namespace
}  // namespace mixccl_torch
