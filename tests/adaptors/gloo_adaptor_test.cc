// The gloo plugin in forked processes: loaded through the loader, a communicator formed over
// the test's allGather, every collective checked (coll_checks.cc). Exit 0 = pass.
//   adaptor_gloo_test NRANKS                    every check must pass
//   adaptor_gloo_test NRANKS --abort            commAbort ends a blocked receive at once
//   adaptor_gloo_test NRANKS --expect-caught N  rank 1 expects a wrong first element in every
//       comparison: passes only when exactly N comparisons of rank 1 caught it and nothing
//       else failed anywhere (so the checker is seen to fail, and a run that fails for any
//       other reason, or checks less, does not pass)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "adaptors/adaptor_loader.h"
#include "coll_checks.h"
#include "base/error.h"
#include "fork_ranks.h"

namespace {

// --abort: rank 0 blocks in a receive nobody sends; commAbort from another thread must end it
// with an error well before the timeout.
int abortCheck(const mixccl::AdaptorTable* t, void* comm, int rank) {
  if (rank != 0) {
    std::this_thread::sleep_for(std::chrono::seconds(3));
    return t->commDestroy(comm) == mixcclSuccess ? 0 : 1;
  }
  std::thread aborter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    t->commAbort(comm);
  });
  float x = 0;
  auto start = std::chrono::steady_clock::now();
  mixcclResult_t rc = t->recv(&x, 1, mixcclFloat32, 1, comm, nullptr);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  aborter.join();
  std::printf("rank 0: recv after abort returned %d after %.2f s: %s\n", rc, s, t->lastError());
  return (rc != mixcclSuccess && s < 2.5) ? 0 : 1;
}

struct Options {
  int nranks = 0;
  bool abort = false;
  int expectCaught = -1;  // --expect-caught N; -1: no injected errors
};

bool parseCount(const char* s, int lo, int hi, int* out) {
  char* end = nullptr;
  long v = std::strtol(s, &end, 10);
  if (end == s || *end != '\0' || v < lo || v > hi) return false;
  *out = static_cast<int>(v);
  return true;
}

// false (after a usage message) on anything but the forms at the top of this file.
bool parseOptions(int argc, char** argv, Options* o) {
  bool ok = argc >= 2 && parseCount(argv[1], 1, 16, &o->nranks);
  for (int i = 2; ok && i < argc; ++i) {
    if (std::strcmp(argv[i], "--abort") == 0 && !o->abort && o->expectCaught < 0)
      o->abort = true;
    else if (std::strcmp(argv[i], "--expect-caught") == 0 && i + 1 < argc && !o->abort &&
             o->expectCaught < 0)
      ok = parseCount(argv[++i], 0, 1000000, &o->expectCaught) && o->nranks >= 2;
    else
      ok = false;
  }
  if (!ok)
    std::fprintf(stderr, "usage: %s NRANKS(1-16) [--abort | --expect-caught N (NRANKS >= 2)]\n",
                 argv[0]);
  return ok;
}

// A rank's verdict on its checks. With injected errors rank 1 must have caught exactly the
// expected number, in every comparison it made, and nothing else may fail on any rank.
int verdict(const adaptor_test::CheckTally& tally, int rank, const Options& o) {
  if (o.expectCaught < 0 || rank != 1) return tally.failures();
  bool exact = tally.mismatches == o.expectCaught && tally.comparisons == o.expectCaught &&
               tally.errors == 0;
  std::printf("rank 1: caught %d of %d injected errors (expected %d), %d other failure(s)\n",
              tally.mismatches, tally.comparisons, o.expectCaught, tally.errors);
  return exact ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!parseOptions(argc, argv, &o)) return 2;
  int problems = adaptor_test::runForkedRanks(
      o.nranks, 100, [&o](int rank, int n, const mixcclAdaptorServices_t& services) {
        const mixccl::Adaptor* a = nullptr;
        if (mixccl::loadAdaptor("gloo", &a) != mixcclSuccess) {
          std::fprintf(stderr, "rank %d: %s\n", rank, mixccl::threadLastError().c_str());
          return 1;
        }
        const mixccl::AdaptorTable* t = a->table;
        char id[MIXCCL_ADAPTOR_UNIQUE_ID_BYTES];
        t->getUniqueId(id);
        void* comm = nullptr;
        if (t->commInitRank(&comm, n, id, rank, 0, &services) != mixcclSuccess) {
          std::fprintf(stderr, "rank %d: commInitRank: %s\n", rank, t->lastError());
          return 1;
        }
        if (o.abort) return abortCheck(t, comm, rank);
        const bool inject = o.expectCaught >= 0 && rank == 1;
        int failures = verdict(adaptor_test::runCollectiveChecks(t, comm, rank, n, inject), rank, o);
        if (t->commDestroy(comm) != mixcclSuccess) ++failures;
        return failures;
      });
  const char* passed = o.expectCaught >= 0 ? "gloo adaptor: the injected errors were caught"
                                           : "gloo adaptor: all checks passed";
  std::printf("%s\n", problems == 0 ? passed : "gloo adaptor: FAILED");
  return problems == 0 ? 0 : 1;
}
