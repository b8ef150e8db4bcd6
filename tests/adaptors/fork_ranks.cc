#include "fork_ranks.h"

#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "coll_checks.h"

namespace adaptor_test {
namespace {

bool writeAll(int fd, const void* p, size_t n) {
  const char* c = static_cast<const char*>(p);
  while (n > 0) {
    ssize_t k = write(fd, c, n);
    if (k <= 0) return false;
    c += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

// Reads n bytes; false on end of stream, error, or nothing for timeoutMs.
bool readAll(int fd, void* p, size_t n, int timeoutMs) {
  char* c = static_cast<char*>(p);
  while (n > 0) {
    pollfd pfd{fd, POLLIN, 0};
    if (poll(&pfd, 1, timeoutMs) <= 0) return false;
    ssize_t k = read(fd, c, n);
    if (k <= 0) return false;
    c += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

struct ChildChannel {
  int fd;
  int nranks;
};

mixcclResult_t childAllGather(void* ctx, const void* mine, void* all, size_t bytes) {
  auto* ch = static_cast<ChildChannel*>(ctx);
  uint64_t len = bytes;
  if (!writeAll(ch->fd, &len, sizeof len) || !writeAll(ch->fd, mine, bytes))
    return mixcclSystemError;
  return readAll(ch->fd, all, bytes * ch->nranks, -1) ? mixcclSuccess : mixcclSystemError;
}

}  // namespace

int runForkedRanks(int nranks, int deadlineS,
                   const std::function<int(int, int, const mixcclAdaptorServices_t&)>& body) {
  std::vector<int> fds(nranks);
  std::vector<pid_t> pids(nranks);
  std::fflush(nullptr);
  for (int r = 0; r < nranks; ++r) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) return 1;
    pid_t pid = fork();
    if (pid == 0) {
      for (int i = 0; i < r; ++i) close(fds[i]);
      close(sv[0]);
      alarm(static_cast<unsigned>(deadlineS));
      ChildChannel ch{sv[1], nranks};
      mixcclAdaptorServices_t services{&ch, childAllGather, servicesReduce};
      int failures = body(r, nranks, services);
      std::fflush(nullptr);
      _exit(failures == 0 ? 0 : 1);
    }
    close(sv[1]);
    fds[r] = sv[0];
    pids[r] = pid;
  }
  // The hub: one contribution from every rank per round, in rank order; ends when every
  // child has closed its end (exited).
  int problems = 0;
  for (;;) {
    std::vector<char> all;
    uint64_t bytes = 0;
    int closed = 0, got = 0;
    for (int r = 0; r < nranks; ++r) {
      uint64_t len = 0;
      if (!readAll(fds[r], &len, sizeof len, deadlineS * 1000)) {
        ++closed;
        continue;
      }
      if (got++ > 0 && len != bytes) {
        std::fprintf(stderr, "hub: rank %d contributes %llu bytes, others %llu\n", r,
                     (unsigned long long)len, (unsigned long long)bytes);
        ++problems;
      }
      bytes = len;
      size_t at = all.size();
      all.resize(at + len);
      if (!readAll(fds[r], all.data() + at, len, deadlineS * 1000)) ++closed;
    }
    if (closed == nranks) break;
    if (closed > 0 || problems > 0) {
      std::fprintf(stderr, "hub: %d rank(s) left during an allGather; killing the rest\n", closed);
      ++problems;
      break;
    }
    for (int r = 0; r < nranks; ++r) writeAll(fds[r], all.data(), all.size());
  }
  if (problems)
    for (pid_t p : pids) kill(p, SIGKILL);
  for (int r = 0; r < nranks; ++r) {
    int status = 0;
    waitpid(pids[r], &status, 0);
    close(fds[r]);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      std::fprintf(stderr, "rank %d failed (%s %d)\n", r,
                   WIFEXITED(status) ? "exit code" : "signal",
                   WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
      ++problems;
    }
  }
  return problems;
}

}  // namespace adaptor_test
