// Tests of the mixcclrun launcher: it is run as a separate process on mixcclrun_test_child.
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "mixcclrun_binding.h"

namespace {

double nowS() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct Job {
  pid_t pid = -1;
  int outFd = -1, errFd = -1;
  std::string out, err;
  int status = -1;

  void start(const std::vector<std::string>& args) {
    int o[2], e[2];
    ASSERT_EQ(pipe(o), 0);
    ASSERT_EQ(pipe(e), 0);
    pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      dup2(o[1], 1);
      dup2(e[1], 2);
      close(o[0]);
      close(e[0]);
      std::vector<char*> argv;
      argv.push_back(const_cast<char*>(MIXCCLRUN_PATH));
      for (auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      execv(MIXCCLRUN_PATH, argv.data());
      _exit(126);
    }
    close(o[1]);
    close(e[1]);
    outFd = o[0];
    errFd = e[0];
  }

  // Reads output until pred() holds or both pipes closed or timeout; returns pred().
  bool pump(double timeoutS, const std::function<bool()>& pred) {
    double end = nowS() + timeoutS;
    while (!pred()) {
      if (outFd < 0 && errFd < 0) return pred();
      double left = end - nowS();
      if (left <= 0) return false;
      pollfd fds[2];
      int n = 0;
      if (outFd >= 0) fds[n++] = {outFd, POLLIN, 0};
      if (errFd >= 0) fds[n++] = {errFd, POLLIN, 0};
      if (poll(fds, n, static_cast<int>(left * 1000) + 1) <= 0) continue;
      for (int i = 0; i < n; ++i) {
        if (!fds[i].revents) continue;
        char buf[4096];
        ssize_t got = read(fds[i].fd, buf, sizeof(buf));
        bool isOut = fds[i].fd == outFd;
        if (got > 0) {
          (isOut ? out : err).append(buf, static_cast<size_t>(got));
        } else {
          close(fds[i].fd);
          (isOut ? outFd : errFd) = -1;
        }
      }
    }
    return true;
  }

  // Drains the output and waits for the exit; returns false on timeout (then kills it).
  bool finish(double timeoutS) {
    double end = nowS() + timeoutS;
    pump(timeoutS, [] { return false; });
    while (nowS() < end) {
      pid_t r = waitpid(pid, &status, WNOHANG);
      if (r == pid) return true;
      usleep(10000);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return false;
  }

  int exitCode() const { return WIFEXITED(status) ? WEXITSTATUS(status) : -1; }
};

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> v;
  std::stringstream ss(s);
  std::string l;
  while (std::getline(ss, l)) v.push_back(l);
  return v;
}

bool processGone(int pid) {
  if (kill(pid, 0) != 0) return true;
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  std::getline(f, stat);
  size_t p = stat.rfind(')');
  return p != std::string::npos && p + 2 < stat.size() && stat[p + 2] == 'Z';
}

std::vector<int> pidsIn(const std::string& out) {
  std::vector<int> pids;
  std::regex re(R"(\] (?:pid|ready) (\d+))");
  for (auto it = std::sregex_iterator(out.begin(), out.end(), re); it != std::sregex_iterator();
       ++it) {
    pids.push_back(std::stoi((*it)[1]));
  }
  return pids;
}

TEST(MixcclRun, PrefixesLinesAndSetsRankEnvironment) {
  Job j;
  j.start({"-np", "3", "-x", "EXTRA_VAR=hello", CHILD_PATH, "env"});
  ASSERT_TRUE(j.finish(20));
  EXPECT_EQ(j.exitCode(), 0) << j.err;
  std::regex re(
      R"(^\[(\d)\] rank=(\d) nranks=3 local=(\d) localsize=3 id=127\.0\.0\.1:(\d+) secret=([0-9a-f]{32}) extra=hello$)");
  std::set<int> seen;
  std::set<std::string> ids, secrets;
  int partial = 0;
  for (const std::string& l : lines(j.out)) {
    std::smatch m;
    if (std::regex_match(l, m, re)) {
      EXPECT_EQ(m[1], m[2]);
      EXPECT_EQ(m[2], m[3]);
      seen.insert(std::stoi(m[1]));
      ids.insert(m[4]);
      secrets.insert(m[5]);
    } else if (std::regex_match(l, std::regex(R"(^\[(\d)\] no newline from \1$)"))) {
      ++partial;
    } else {
      ADD_FAILURE() << "unexpected stdout line: '" << l << "'";
    }
  }
  EXPECT_EQ(seen, (std::set<int>{0, 1, 2}));
  EXPECT_EQ(ids.size(), 1u);
  EXPECT_EQ(secrets.size(), 1u);
  EXPECT_EQ(partial, 3);  // the unterminated last line is flushed with its prefix
  int errLines = 0;
  for (const std::string& l : lines(j.err)) {
    if (std::regex_match(l, std::regex(R"(^\[(\d)\] stderr line of \1$)"))) ++errLines;
  }
  EXPECT_EQ(errLines, 3) << j.err;
}

TEST(MixcclRun, NoPrefixOption) {
  Job j;
  j.start({"--no-prefix", "-np", "2", CHILD_PATH, "env"});
  ASSERT_TRUE(j.finish(20));
  EXPECT_EQ(j.exitCode(), 0);
  for (const std::string& l : lines(j.out)) EXPECT_NE(l[0], '[') << l;
}

TEST(MixcclRun, FailingRankFailsJobAndKillsOthers) {
  Job j;
  double t0 = nowS();
  j.start({"-np", "3", "--grace", "2", CHILD_PATH, "fail", "1", "7"});
  ASSERT_TRUE(j.finish(25));
  double took = nowS() - t0;
  EXPECT_EQ(j.exitCode(), 7) << j.err;
  EXPECT_LT(took, 15.0);  // the others sleep 60 s unless killed
  EXPECT_NE(j.err.find("rank 1"), std::string::npos) << j.err;
  EXPECT_NE(j.err.find("exited with status 7"), std::string::npos) << j.err;
  std::vector<int> pids = pidsIn(j.out);
  EXPECT_EQ(pids.size(), 2u) << j.out;
  for (int p : pids) EXPECT_TRUE(processGone(p)) << "rank process " << p << " survived";
}

TEST(MixcclRun, RankKilledBySignalIsReported) {
  Job j;
  j.start({"-np", "2", CHILD_PATH, "segv", "0"});
  ASSERT_TRUE(j.finish(25));
  EXPECT_EQ(j.exitCode(), 128 + SIGSEGV);
  EXPECT_NE(j.err.find("rank 0"), std::string::npos) << j.err;
  EXPECT_NE(j.err.find("signal 11"), std::string::npos) << j.err;
}

TEST(MixcclRun, KeepGoingLetsTheOthersFinish) {
  Job j;
  j.start({"--keep-going", "-np", "3", CHILD_PATH, "lose", "1"});
  ASSERT_TRUE(j.finish(25));
  EXPECT_EQ(j.exitCode(), 0) << j.err;
  EXPECT_NE(j.err.find("was killed by signal 9 (Killed); the others go on (--keep-going)"),
            std::string::npos) << j.err;
  EXPECT_NE(j.err.find("mixcclrun: --keep-going: lost rank(s) 1; the others completed"),
            std::string::npos) << j.err;
  EXPECT_NE(j.out.find("[0] finished"), std::string::npos) << j.out;
  EXPECT_NE(j.out.find("[2] finished"), std::string::npos) << j.out;
}

TEST(MixcclRun, KeepGoingWithNoRankCompletingFails) {
  Job j;
  j.start({"--keep-going", "-np", "1", CHILD_PATH, "lose", "0"});
  ASSERT_TRUE(j.finish(25));
  EXPECT_EQ(j.exitCode(), 128 + SIGKILL) << j.err;
  EXPECT_NE(j.err.find("mixcclrun: --keep-going: lost rank(s) 0; no rank completed"),
            std::string::npos) << j.err;
}

TEST(MixcclRun, SurvivorIgnoringSigtermGetsSigkill) {
  Job j;
  double t0 = nowS();
  j.start({"-np", "2", "--grace", "0.5", CHILD_PATH, "stubborn", "1"});
  ASSERT_TRUE(j.finish(25));
  EXPECT_EQ(j.exitCode(), 1);
  EXPECT_LT(nowS() - t0, 15.0);
  EXPECT_NE(j.err.find("SIGKILL"), std::string::npos) << j.err;
  for (int p : pidsIn(j.out)) EXPECT_TRUE(processGone(p));
}

TEST(MixcclRun, ForwardsSigterm) {
  Job j;
  j.start({"-np", "2", CHILD_PATH, "trap"});
  ASSERT_TRUE(j.pump(15, [&] { return pidsIn(j.out).size() == 2; })) << j.out << j.err;
  ASSERT_EQ(kill(j.pid, SIGTERM), 0);
  ASSERT_TRUE(j.finish(20));
  EXPECT_NE(j.out.find("[0] got signal 15"), std::string::npos) << j.out;
  EXPECT_NE(j.out.find("[1] got signal 15"), std::string::npos) << j.out;
  EXPECT_EQ(j.exitCode(), 128 + SIGTERM);
}

TEST(MixcclRun, ForwardsSigint) {
  Job j;
  j.start({"-np", "2", CHILD_PATH, "trap"});
  ASSERT_TRUE(j.pump(15, [&] { return pidsIn(j.out).size() == 2; })) << j.out << j.err;
  ASSERT_EQ(kill(j.pid, SIGINT), 0);
  ASSERT_TRUE(j.finish(20));
  EXPECT_NE(j.out.find("[0] got signal 2"), std::string::npos) << j.out;
  EXPECT_NE(j.out.find("[1] got signal 2"), std::string::npos) << j.out;
  EXPECT_EQ(j.exitCode(), 128 + SIGINT);
}

TEST(MixcclRun, RanksDieWithLauncher) {
  Job j;
  j.start({"-np", "2", CHILD_PATH, "sleep"});
  ASSERT_TRUE(j.pump(15, [&] { return pidsIn(j.out).size() == 2; })) << j.out << j.err;
  std::vector<int> pids = pidsIn(j.out);
  ASSERT_EQ(kill(j.pid, SIGKILL), 0);
  waitpid(j.pid, &j.status, 0);
  double end = nowS() + 10;
  for (int p : pids) {
    while (!processGone(p) && nowS() < end) usleep(20000);
    EXPECT_TRUE(processGone(p)) << "rank process " << p << " outlived mixcclrun";
  }
}

TEST(MixcclRun, JobTimeout) {
  Job j;
  j.start({"-np", "2", "--timeout", "1", "--grace", "0.5", CHILD_PATH, "sleep"});
  ASSERT_TRUE(j.finish(20));
  EXPECT_EQ(j.exitCode(), 124);
}

TEST(MixcclRun, HostList) {
  Job ok;
  ok.start({"-np", "1", "--host-list", "localhost,127.0.0.1:4", CHILD_PATH, "env"});
  ASSERT_TRUE(ok.finish(20));
  EXPECT_EQ(ok.exitCode(), 0) << ok.err;
  Job bad;
  bad.start({"-np", "1", "--host-list", "localhost,192.0.2.123", CHILD_PATH, "env"});
  ASSERT_TRUE(bad.finish(20));
  EXPECT_EQ(bad.exitCode(), 2);
  EXPECT_NE(bad.err.find("192.0.2.123"), std::string::npos) << bad.err;
}

// --adaptors: one MIXCCL_ADAPTOR per rank, in rank order; NAME:COUNT repeats a name.
std::set<std::string> adaptorLines(const std::vector<std::string>& args, int* exitCode) {
  Job j;
  j.start(args);
  EXPECT_TRUE(j.finish(20));
  *exitCode = j.exitCode();
  std::vector<std::string> v = lines(j.out);
  return std::set<std::string>(v.begin(), v.end());
}

TEST(MixcclRun, AdaptorsPerRank) {
  int code = -1;
  EXPECT_EQ(adaptorLines({"-np", "4", "--adaptors", "host,gloo,host,gloo", CHILD_PATH, "adaptor"},
                         &code),
            (std::set<std::string>{"[0] adaptor=host", "[1] adaptor=gloo", "[2] adaptor=host",
                                   "[3] adaptor=gloo"}));
  EXPECT_EQ(code, 0);
  // -np may be left out; counts expand in order.
  EXPECT_EQ(adaptorLines({"--adaptors", "host:2,mpi", CHILD_PATH, "adaptor"}, &code),
            (std::set<std::string>{"[0] adaptor=host", "[1] adaptor=host", "[2] adaptor=mpi"}));
  EXPECT_EQ(code, 0);
}

TEST(MixcclRun, AdaptorsUsageErrors) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"-np", "3", "--adaptors", "host,gloo", CHILD_PATH, "adaptor"},
       "mixcclrun: --adaptors names 2 rank(s) but -np is 3\n"},
      {{"--adaptors", "host:x", CHILD_PATH, "adaptor"},
       "mixcclrun: invalid count in --adaptors entry 'host:x' (NAME or NAME:COUNT)\n"},
      {{"--adaptors", "host,,gloo", CHILD_PATH, "adaptor"},
       "mixcclrun: invalid adaptor name '' in --adaptors 'host,,gloo'\n"},
      {{"--adaptors", "../x", CHILD_PATH, "adaptor"},
       "mixcclrun: invalid adaptor name '../x' in --adaptors '../x'\n"},
      {{"--adaptors", "host", "-x", "MIXCCL_ADAPTOR=gloo", CHILD_PATH, "adaptor"},
       "mixcclrun: -x MIXCCL_ADAPTOR and --adaptors both set the adaptor; use one\n"},
  };
  for (const auto& c : cases) {
    Job j;
    j.start(c.first);
    ASSERT_TRUE(j.finish(20));
    EXPECT_EQ(j.exitCode(), 2);
    EXPECT_EQ(j.err, c.second);
    EXPECT_EQ(j.out, "");
  }
}

TEST(MixcclRun, UsageErrors) {
  for (auto args : std::vector<std::vector<std::string>>{
           {CHILD_PATH, "env"}, {"-np", "0", CHILD_PATH}, {"-np", "2"}, {"--bogus", "-np", "1"}}) {
    Job j;
    j.start(args);
    ASSERT_TRUE(j.finish(20));
    EXPECT_EQ(j.exitCode(), 2) << j.err;
  }
  Job missing;
  missing.start({"-np", "1", "/nonexistent/program"});
  ASSERT_TRUE(missing.finish(20));
  EXPECT_EQ(missing.exitCode(), 127);
}


// --bind-to (mixcclrun_binding.h). Each rank prints the CPUs it may run on; the launcher's own
// list is this test's (it inherits it).
std::string cpusAllowed(const std::string& statusText) {
  std::smatch m;
  std::regex re(R"(Cpus_allowed_list:\s*(\S+))");
  return std::regex_search(statusText, m, re) ? std::string(m[1]) : std::string();
}

std::vector<std::string> rankCpus(const std::vector<std::string>& opts, int* code) {
  Job j;
  std::vector<std::string> args = opts;
  for (const char* a : {"grep", "Cpus_allowed_list", "/proc/self/status"}) args.push_back(a);
  j.start(args);
  EXPECT_TRUE(j.finish(20));
  *code = j.exitCode();
  std::vector<std::string> out;
  for (const std::string& l : lines(j.out)) out.push_back(cpusAllowed(l));
  return out;
}

int usableCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  return sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
}

std::string ownCpus() {
  std::ifstream f("/proc/self/status");
  std::stringstream ss;
  ss << f.rdbuf();
  return cpusAllowed(ss.str());
}

TEST(MixcclRun, BindAutoPutsEachRankOnItsOwnCore) {
  std::string why;
  if (mixcclrun::allowedCores(&why).size() < 2) GTEST_SKIP() << "fewer than 2 cores " << why;
  int code = -1;
  std::vector<std::string> got = rankCpus({"-np", "2"}, &code);
  ASSERT_EQ(code, 0);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_NE(got[0], ownCpus());
  EXPECT_NE(got[0], got[1]);
  EXPECT_NE(got[1], ownCpus());
}

TEST(MixcclRun, BindNoneAndOversubscribedAutoLeaveRanksUnbound) {
  int code = -1;
  for (const std::string& l : rankCpus({"-np", "2", "--bind-to", "none"}, &code))
    EXPECT_EQ(l, ownCpus());
  EXPECT_EQ(code, 0);
  // More ranks than CPUs (so than cores): auto binds nobody.
  std::string np = std::to_string(usableCpus() + 1);
  std::vector<std::string> got = rankCpus({"-np", np}, &code);
  EXPECT_EQ(code, 0);
  EXPECT_EQ(got.size(), static_cast<size_t>(usableCpus() + 1));
  for (const std::string& l : got) EXPECT_EQ(l, ownCpus());
}

TEST(MixcclRunBinding, PlanBindsWhenRanksFitTheCores) {
  using mixcclrun::BindMode;
  std::string why;
  EXPECT_EQ(mixcclrun::planBinding(BindMode::Auto, 2, 2, &why), (std::vector<int>{0, 1}));
  EXPECT_TRUE(mixcclrun::planBinding(BindMode::Auto, 3, 2, &why).empty());
  EXPECT_TRUE(mixcclrun::planBinding(BindMode::None, 1, 8, &why).empty());
  EXPECT_EQ(why, "");
  EXPECT_EQ(mixcclrun::planBinding(BindMode::Core, 3, 4, &why), (std::vector<int>{0, 1, 2}));
  EXPECT_TRUE(mixcclrun::planBinding(BindMode::Core, 5, 4, &why).empty());
  EXPECT_EQ(why, "--bind-to core: 5 ranks but 4 core(s) available to this process (use "
                 "--bind-to none to oversubscribe)");
}

TEST(MixcclRun, BindUsageErrors) {
  Job j;
  j.start({"-np", "4096", "--bind-to", "core", "true"});
  ASSERT_TRUE(j.finish(20));
  EXPECT_EQ(j.exitCode(), 2);
  EXPECT_TRUE(std::regex_match(j.err, std::regex(
      R"(mixcclrun: --bind-to core: 4096 ranks but \d+ core\(s\) available to this process )"
      R"(\(use --bind-to none to oversubscribe\)\n)"))) << j.err;
  Job k;
  k.start({"-np", "2", "--bind-to", "socket", "true"});
  ASSERT_TRUE(k.finish(20));
  EXPECT_EQ(k.exitCode(), 2);
  EXPECT_EQ(k.err, "mixcclrun: invalid --bind-to 'socket' (auto, core or none)\n");
}

}  // namespace
