// A process that hosts a rendezvous root may exit while the root still waits for ranks: here
// rank 1 of 2 holds another secret and is refused, the root waits for rank 0 until its
// timeout (MIXCCL_TIMEOUT_S=2), and the process exits before that. OpenSSL's exit handler
// then frees its global state, after which a thread's own OpenSSL state (its random
// generators) can no longer be given back: the root's thread must not hold any by then.
//
// To make that exit race certain rather than rare, an exit handler registered before OpenSSL's
// (so it runs after it) waits for the root's thread to end. The sanitizer stage runs this under
// LeakSanitizer (scripts/run-sanitizers.sh), whose check comes last and fails the exit if the
// root's thread still held such state; every build checks the refusal's message, the root's
// count of refused connections and that the root ended.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "bootstrap/root.h"
#include "bootstrap/unique_id.h"
#include "mixccl.h"

using namespace mixccl;

namespace {

using Clock = std::chrono::steady_clock;

bool waitFor(bool (*done)(), double seconds) {
  const auto end = Clock::now() + std::chrono::duration<double>(seconds);
  while (!done())
    if (Clock::now() > end) return false;
    else std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return true;
}

// Runs after OpenSSL's exit handler (registered later, at the library's first OpenSSL call).
void waitForTheRootToEnd() {
  if (!waitFor([] { return rendezvousRootsRunning() == 0; }, 20)) {
    fprintf(stderr, "the rendezvous root did not end within 20 s of its 2 s timeout\n");
    fflush(stderr);
    _exit(1);
  }
  printf("the root ended after OpenSSL's exit handler\n");
  fflush(stdout);
}

}  // namespace

int main() {
  setenv("MIXCCL_TIMEOUT_S", "2", 1);
  atexit(waitForTheRootToEnd);
  mixcclUniqueId id;
  if (mixcclGetUniqueId(&id) != mixcclSuccess) {
    fprintf(stderr, "mixcclGetUniqueId failed: %s\n", mixcclGetLastError(nullptr));
    return 1;
  }
  UniqueIdData data;
  if (decodeUniqueId(id, &data) != mixcclSuccess) return 1;
  data.secret.bytes[3] ^= 0x01;
  mixcclUniqueId wrong;
  encodeUniqueId(data, &wrong);
  mixcclComm_t comm = nullptr;
  const mixcclResult_t rc = mixcclCommInitRank(&comm, 2, wrong, 1);
  const std::string message = mixcclGetLastError(nullptr);
  if (rc != mixcclRemoteError || message.find("failed (wrong secret)") == std::string::npos) {
    fprintf(stderr, "expected the wrong secret to be refused, got %d: %s\n", (int)rc,
            message.c_str());
    return 1;
  }
  if (!waitFor([] { return rootConnectionCounts().refused >= 1; }, 5) ||
      rootConnectionCounts().refused != 1) {
    fprintf(stderr, "the root counted %llu refused connections, expected 1\n",
            (unsigned long long)rootConnectionCounts().refused);
    return 1;
  }
  if (rendezvousRootsRunning() != 1) {
    fprintf(stderr, "expected the root still waiting for rank 0, %d roots running\n",
            rendezvousRootsRunning());
    return 1;
  }
  printf("refused for its secret; exiting while the root waits for rank 0\n");
  return 0;
}
