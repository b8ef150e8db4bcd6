// Keeps fork() safe in a process that hosts a rendezvous root. The README lets a program call
// mixcclGetUniqueId and then fork its ranks; meanwhile the root's threads (src/bootstrap/root.cc)
// authenticate the ranks that are already running. A child forked while one of them holds a
// lock (the allocator's, the log's, OpenSSL's) would inherit that lock held and hang on it.
//
// So those threads mark the stretches where they compute as "busy" and leave them whenever they
// block on a socket (the deadline-bounded helpers of socket.h do that for them). fork(), through
// pthread_atfork, waits until no thread is busy, holds new busy stretches back until the child
// exists, and also takes the library's OpenSSL lock. Busy stretches are short (a handshake
// step), so fork is delayed by microseconds.
#pragma once

#include <mutex>

namespace mixccl {

// The calling thread is busy for the lifetime of this object (it blocks while a fork is
// starting); waits inside socket.h helpers pause it.
class ForkGuardedThread {
 public:
  ForkGuardedThread();
  ~ForkGuardedThread();
  ForkGuardedThread(const ForkGuardedThread&) = delete;
  ForkGuardedThread& operator=(const ForkGuardedThread&) = delete;
};

// Around a blocking wait of a guarded thread (no-op on other threads).
class ForkGuardPause {
 public:
  ForkGuardPause();
  ~ForkGuardPause();
  ForkGuardPause(const ForkGuardPause&) = delete;
  ForkGuardPause& operator=(const ForkGuardPause&) = delete;

 private:
  bool paused_;
};

// Starting a guarded thread from a guarded (busy) one without a window: the starter calls
// handOff() before creating the thread, the thread's body holds a ForkGuardAdopted, and the
// thread that joins it calls releaseHandedOff() after join() returns (so the thread's exit,
// which frees memory, is covered too). Join it inside a ForkGuardPause.
void forkGuardHandOff();
void forkGuardReleaseHandedOff();
class ForkGuardAdopted {
 public:
  ForkGuardAdopted();
  ~ForkGuardAdopted();
  ForkGuardAdopted(const ForkGuardAdopted&) = delete;
  ForkGuardAdopted& operator=(const ForkGuardAdopted&) = delete;
};

// The lock every OpenSSL call of the library holds; fork takes it too.
std::unique_lock<std::mutex> lockCrypto();

}  // namespace mixccl
