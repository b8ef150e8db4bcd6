// Proxy::wait: the waiting caller drives progress itself, and when several threads wait on one
// proxy at once (point-to-point from several threads, mixccl.h), one of them drives for all
// while the others park until their request is finished or it is their turn.
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>

#include "base/error.h"
#include "proxy/proxy.h"

namespace mixccl {

namespace {
// Threads of this process inside Proxy::wait, over all communicators.
std::atomic<int> waitersInProcess{0};
struct WaiterCount {
  WaiterCount() { waitersInProcess.fetch_add(1, std::memory_order_relaxed); }
  ~WaiterCount() { waitersInProcess.fetch_sub(1, std::memory_order_relaxed); }
  bool others() const { return waitersInProcess.load(std::memory_order_relaxed) > 1; }
};
}  // namespace

// Another thread drives progress (it holds progressMutex_): its rounds finish r too, so this
// one sleeps until r is finished or the driver lets go, then takes over. Returns with r
// finished or with lock (on progressMutex_) held.
void Proxy::awaitDriver(TransportRequest* r, const Deadline& deadline,
                        std::unique_lock<std::mutex>& lock) {
  // The driver may be blocked in epoll for the whole of its own wait: r is not handed to its
  // connection until the driver's next round, so wake it now.
  wake();
  bool overdueAsked = false;
  while (r->stateNow() == TransportRequest::Pending) {
    {
      std::unique_lock<std::mutex> park(parkMutex_);
      parked_.fetch_add(1);
      // The bound is only a safety net (wake-ups are not lost, see complete()); a holder that
      // is not a waiting driver (the idle thread, a probe) keeps the lock for one round only.
      parkCv_.wait_for(park, std::chrono::milliseconds(2), [&] {
        return r->stateNow() != TransportRequest::Pending || !driving_.load();
      });
      parked_.fetch_sub(1);
    }
    if (r->stateNow() != TransportRequest::Pending) break;
    if (lock.try_lock()) break;
    if (!driving_.load()) sched_yield();
    // The driver only watches its own deadline: it fails the communicator for this one too.
    if (!overdueAsked && deadline.expired()) {
      overdueAsked = true;
      overdue_.store(r);
      wake();
    }
  }
  // Finished before the driver looked, or this thread drives now: the mark must not outlive r
  // (its memory may be reused by a later request).
  if (overdueAsked) {
    TransportRequest* mine = r;
    overdue_.compare_exchange_strong(mine, nullptr);
  }
}

// The driver leaves: a parked waiter whose request is not finished takes over.
void Proxy::handOver() {
  driving_.store(false);
  wakeParked();
}

void Proxy::wakeParked() {
  // The fence orders the caller's store (a request's state, driving_) before the look at
  // parked_, and awaitDriver counts itself before it looks at them: one of the two sees the
  // other, so no wake-up is lost.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (parked_.load(std::memory_order_relaxed) > 0) {
    std::lock_guard<std::mutex> lock(parkMutex_);
    parkCv_.notify_all();
  }
}

Result Proxy::wait(TransportRequest* r, const Deadline& deadline) {
  if (r->stateNow() == TransportRequest::Pending) {
    // The waiting thread moves the bytes itself: handing each event to another thread costs a
    // wake-up per message, which dominates small-message latency (docs/architecture.md).
    // Several threads may wait at once (point-to-point from several threads, mixccl.h): one
    // drives, for all of them; the others sleep until theirs is finished or it is their turn.
    std::unique_lock<std::mutex> lock(progressMutex_, std::try_to_lock);
    if (!lock.owns_lock()) awaitDriver(r, deadline, lock);
    if (lock.owns_lock()) driveUntilFinished(r, deadline, lock);
    if (lock.owns_lock()) {
      lock.unlock();
      handOver();
    }
  }
  if (r->stateNow() == TransportRequest::Done) return mixcclSuccess;
  std::string msg;
  health_.error(&msg);
  return adoptError(r->result, msg);
}

// Called with lock (on progressMutex_) held.
void Proxy::driveUntilFinished(TransportRequest* r, const Deadline& deadline,
                               std::unique_lock<std::mutex>& lock) {
  driving_.store(true);
  {
    WaiterCount waiting;
    const auto spinFor = std::chrono::microseconds(params_.spinUs);
    auto spinEnd = Clock::now() + spinFor;
    bool timedOut = false;
    bool reported = false;
    bool spinning = true;
    bool movedSinceLook = false;
    // While spinning, the clock and the deadline are looked at every kSpinStride-th round
    // only: each round they skip answers a message sooner. Not when every round yields: a
    // yield may last another rank's time slice, and a spin that outlasts MIXCCL_SPIN_US by
    // eight of them keeps the core from the rank it waits for (4 ranks on 2 CPUs, 8 bytes:
    // 1.27x the time).
    for (unsigned round = 0; r->stateNow() == TransportRequest::Pending; ++round) {
      // With more ranks on the host than CPUs, the peer we wait for may need exactly this
      // core: give it away at every round; likewise while another thread of this process
      // waits too (the PyTorch backend's lanes: one communicator per thread, all of a rank's
      // threads bound to one core under mixcclrun). Otherwise a yield only costs (a system
      // call, and a switch to whatever kernel thread is runnable; docs/performance.md).
      const bool yielding = params_.yieldWhileSpinning || waiting.others();
      bool look = !spinning || yielding || round % kSpinStride == 0;
      if (look) {
        // With a CPU per rank, MIXCCL_SPIN_US counts from the last round that moved something:
        // a large message arrives piece after piece, and sleeping between pieces costs a
        // wake-up each (over UCX's tcp, 64 MiB: hundreds per call). Not when spinning yields:
        // there the peers need the cores this rank would keep polling on (4 ranks on 2 CPUs,
        // shared memory, 512 B-4 KiB: 1.4-1.6x the time).
        const auto now = Clock::now();
        if (movedSinceLook && !yielding) spinEnd = now + spinFor;
        movedSinceLook = false;
        spinning = now < spinEnd;
        if (now >= nextSample_) sampleProgress(now);  // every kSampleEvery
        if (sizeMismatch_.peer >= 0 && now >= sizeMismatch_.until) failSizeMismatch();
        // Most of the timeout has passed: tell every peer whom this rank waits for, so that
        // whoever reaches its deadline first can follow the waits to the rank that stopped.
        if (!reported && deadline.at() - now <= reportLead_) {
          reported = true;
          reportWaits(now);
        }
      }
      const bool moved = progressOnce(spinning ? 0 : std::max(1, deadline.remainingMs(100)), r);
      movedSinceLook = movedSinceLook || moved;
      if (r->stateNow() != TransportRequest::Pending) break;
      // A probe on another thread needs one round of its own (probe()): let it have it.
      if (probing_.load(std::memory_order_relaxed) > 0) {
        lock.unlock();
        while (probing_.load() > 0) sched_yield();
        lock.lock();
        driving_.store(true);  // a parked waiter may have driven meanwhile, and left
      }
      if (spinning && yielding) sched_yield();
      if (!look) continue;
      if (!timedOut && deadline.expired()) {
        timedOut = true;
        failOnTimeout(r);
      }
      // A parked waiter's deadline passed (awaitDriver); it may have finished meanwhile.
      if (TransportRequest* o = overdue_.exchange(nullptr))
        if (live_.count(o) && o->stateNow() == TransportRequest::Pending) failOnTimeout(o);
    }
  }
}

}  // namespace mixccl
