#include "bootstrap/fork_guard.h"

#include <pthread.h>

#include <condition_variable>

namespace mixccl {
namespace {

struct Gate {
  std::mutex m;
  std::condition_variable cv;
  int busy = 0;
  bool forking = false;
  std::mutex crypto;
  Gate* previous = nullptr;  // abandoned by a fork (kept reachable)
};

// Never destroyed: usable until exit. Replaced in a forked child (afterForkChild).
Gate*& gateSlot() {
  static Gate* g = new Gate;
  return g;
}

Gate& gate() { return *gateSlot(); }

thread_local int tlsGuardDepth = 0;  // > 0: a guarded thread
thread_local bool tlsBusy = false;

void enterBusy() {
  Gate& g = gate();
  std::unique_lock<std::mutex> lock(g.m);
  g.cv.wait(lock, [&] { return !g.forking; });
  ++g.busy;
  tlsBusy = true;
}

void leaveBusy() {
  Gate& g = gate();
  {
    std::lock_guard<std::mutex> lock(g.m);
    --g.busy;
    tlsBusy = false;
  }
  g.cv.notify_all();
}

// prepare: wait until nothing is busy, keep the gate closed, take the OpenSSL lock (in this
// order: a busy thread may be waiting for that lock and must be able to finish first).
void prepareFork() {
  Gate& g = gate();
  std::unique_lock<std::mutex> lock(g.m);
  g.forking = true;
  g.cv.wait(lock, [&] { return g.busy == 0; });
  lock.unlock();
  g.crypto.lock();
}

void afterForkParent() {
  Gate& g = gate();
  g.crypto.unlock();
  {
    std::lock_guard<std::mutex> lock(g.m);
    g.forking = false;
  }
  g.cv.notify_all();
}

void afterForkChild() {
  // Only the forking thread exists in the child: nothing is busy there. The parent's threads
  // may have been waiting on the condition variable at the fork; its copy here would wait for
  // those phantom waiters forever (glibc), so the child gets fresh synchronisation objects
  // (the old ones are abandoned, not destroyed: destroying them could block the same way).
  Gate* fresh = new Gate;
  fresh->previous = gateSlot();
  gateSlot() = fresh;
}

void registerOnce() {
  static std::once_flag once;
  std::call_once(once, [] { pthread_atfork(prepareFork, afterForkParent, afterForkChild); });
}

}  // namespace

ForkGuardedThread::ForkGuardedThread() {
  registerOnce();
  if (tlsGuardDepth++ == 0) enterBusy();
}

ForkGuardedThread::~ForkGuardedThread() {
  if (--tlsGuardDepth == 0 && tlsBusy) leaveBusy();
}

ForkGuardPause::ForkGuardPause() : paused_(tlsGuardDepth > 0 && tlsBusy) {
  if (paused_) leaveBusy();
}

ForkGuardPause::~ForkGuardPause() {
  if (paused_) enterBusy();
}

void forkGuardHandOff() {
  registerOnce();
  Gate& g = gate();
  std::lock_guard<std::mutex> lock(g.m);
  ++g.busy;  // the caller is busy, so no fork is between its prepare and its child now
}

void forkGuardReleaseHandedOff() {
  Gate& g = gate();
  {
    std::lock_guard<std::mutex> lock(g.m);
    --g.busy;
  }
  g.cv.notify_all();
}

ForkGuardAdopted::ForkGuardAdopted() {
  ++tlsGuardDepth;
  tlsBusy = true;
}

ForkGuardAdopted::~ForkGuardAdopted() {
  --tlsGuardDepth;
  // Still counted as busy: the joiner releases it once the thread has fully exited. If a
  // pause left this thread not busy at the end, take the count back so the joiner's release
  // balances.
  if (!tlsBusy) enterBusy();
  tlsBusy = false;
}

std::unique_lock<std::mutex> lockCrypto() {
  registerOnce();
  return std::unique_lock<std::mutex>(gate().crypto);
}

}  // namespace mixccl
