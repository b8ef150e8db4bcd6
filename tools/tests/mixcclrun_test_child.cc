// Scripted rank for the mixcclrun tests. Usage: mixcclrun_test_child MODE [ARG]
//   env          print this rank's launcher variables, one stdout line, one stderr line, and a
//                last stdout line without a newline
//   fail R CODE  rank R exits with CODE after 200 ms; the others print "pid <pid>" and sleep 60 s
//   segv R       rank R raises SIGSEGV after 200 ms; the others sleep 60 s
//   trap         print "ready <pid>", then wait; on SIGTERM/SIGINT print "got signal N", exit 0
//   stubborn R   rank R exits 1 after 300 ms; the others ignore SIGTERM, print "pid <pid>" and
//                sleep 60 s
//   sleep        print "pid <pid>" and sleep 60 s
//   adaptor      print "adaptor=<MIXCCL_ADAPTOR>" ("(unset)" when it is not set)
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {
volatile sig_atomic_t g_sig = 0;
void onSig(int s) { g_sig = s; }
int rankOf() {
  const char* r = std::getenv("MIXCCL_RANK");
  return r ? std::atoi(r) : -1;
}
void sleepLong() {
  for (int i = 0; i < 600; ++i) usleep(100000);
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const int rank = rankOf();
  const char* mode = argv[1];
  if (std::strcmp(mode, "env") == 0) {
    const char* id = std::getenv("MIXCCL_COMM_ID");
    const char* secret = std::getenv("MIXCCL_COMM_SECRET");
    std::printf("rank=%s nranks=%s local=%s localsize=%s id=%s secret=%s extra=%s\n",
                std::getenv("MIXCCL_RANK"), std::getenv("MIXCCL_NRANKS"),
                std::getenv("MIXCCL_LOCAL_RANK"), std::getenv("MIXCCL_LOCAL_SIZE"),
                id ? id : "(unset)", secret ? secret : "(unset)",
                std::getenv("EXTRA_VAR") ? std::getenv("EXTRA_VAR") : "(unset)");
    std::fprintf(stderr, "stderr line of %d\n", rank);
    std::printf("no newline from %d", rank);
    return 0;
  }
  if (std::strcmp(mode, "adaptor") == 0) {
    const char* a = std::getenv("MIXCCL_ADAPTOR");
    std::printf("adaptor=%s\n", a ? a : "(unset)");
    return 0;
  }
  if (std::strcmp(mode, "fail") == 0 || std::strcmp(mode, "segv") == 0 ||
      std::strcmp(mode, "stubborn") == 0) {
    int who = argc > 2 ? std::atoi(argv[2]) : 0;
    if (rank == who) {
      usleep(std::strcmp(mode, "stubborn") == 0 ? 300000 : 200000);
      if (std::strcmp(mode, "segv") == 0) raise(SIGSEGV);
      return std::strcmp(mode, "fail") == 0 ? (argc > 3 ? std::atoi(argv[3]) : 1) : 1;
    }
    if (std::strcmp(mode, "stubborn") == 0) signal(SIGTERM, SIG_IGN);
    std::printf("pid %d\n", static_cast<int>(getpid()));
    std::fflush(stdout);
    sleepLong();
    return 0;
  }
  if (std::strcmp(mode, "lose") == 0) {  // rank argv[2] is killed; the others finish later
    if (rank == (argc > 2 ? std::atoi(argv[2]) : 0)) {
      usleep(100000);
      raise(SIGKILL);
    }
    usleep(600000);
    std::printf("finished\n");
    return 0;
  }
  if (std::strcmp(mode, "trap") == 0) {
    signal(SIGTERM, onSig);
    signal(SIGINT, onSig);
    std::printf("ready %d\n", static_cast<int>(getpid()));
    std::fflush(stdout);
    for (int i = 0; i < 600 && g_sig == 0; ++i) usleep(50000);
    std::printf("got signal %d\n", static_cast<int>(g_sig));
    return g_sig ? 0 : 1;
  }
  if (std::strcmp(mode, "sleep") == 0) {
    std::printf("pid %d\n", static_cast<int>(getpid()));
    std::fflush(stdout);
    sleepLong();
    return 0;
  }
  return 2;
}
