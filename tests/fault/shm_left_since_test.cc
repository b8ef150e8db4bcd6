// The leak check the fault tests share (fault::shmLeftSince): a name this test tree left in
// /dev/shm is reported; one that goes away within the grace, or that a process outside this
// test's tree holds open (another test that ctest runs at the same moment), is not.
#include <fcntl.h>
#include <gtest/gtest.h>

#include <thread>

#include "fault_harness.h"

namespace {

constexpr double kGraceS = 0.3;

std::string plant(const std::string& tag) {
  const std::string name = "mixccl-harness-" + std::to_string(getpid()) + "-" + tag;
  const int fd = open(("/dev/shm/" + name).c_str(), O_CREAT | O_RDWR, 0600);
  EXPECT_GE(fd, 0) << "cannot create /dev/shm/" << name;
  if (fd >= 0) close(fd);
  return name;
}

void unplant(const std::string& name) { unlink(("/dev/shm/" + name).c_str()); }

// A process that holds /dev/shm/name open until killed. Outside this test's tree when
// `detached` (its parent exits at once, so it is re-parented away), else this test's child.
// Returns its pid once it holds the file (-1 on failure).
pid_t holder(const std::string& name, bool detached) {
  int ready[2];
  if (pipe(ready) != 0) return -1;
  const pid_t child = fork();
  if (child == 0) {
    if (detached && fork() != 0) _exit(0);
    const int fd = open(("/dev/shm/" + name).c_str(), O_RDONLY);
    const pid_t me = fd >= 0 ? getpid() : -1;
    if (write(ready[1], &me, sizeof(me)) != (ssize_t)sizeof(me)) _exit(1);
    for (int i = 0; i < 600; ++i) usleep(100 * 1000);  // killed long before this ends
    _exit(0);
  }
  close(ready[1]);
  pid_t pid = -1;
  if (read(ready[0], &pid, sizeof(pid)) != (ssize_t)sizeof(pid)) pid = -1;
  close(ready[0]);
  if (detached) waitpid(child, nullptr, 0);
  return pid;
}

void stop(pid_t pid, bool child) {
  kill(pid, SIGKILL);
  if (child) waitpid(pid, nullptr, 0);
}

TEST(ShmLeftSince, ReportsANameLeftByThisTest) {
  const std::set<std::string> before = fault::shmFiles();
  const std::string name = plant("left");
  EXPECT_EQ(fault::shmLeftSince(before, "mixccl", kGraceS), name);
  unplant(name);
}

TEST(ShmLeftSince, PassesOverANameRemovedWithinTheGrace) {
  const std::set<std::string> before = fault::shmFiles();
  const std::string name = plant("transient");
  std::thread remover([&] {
    usleep(100 * 1000);
    unplant(name);
  });
  EXPECT_EQ(fault::shmLeftSince(before, "mixccl", kGraceS), "");
  remover.join();
}

TEST(ShmLeftSince, PassesOverANameAnotherTestHoldsOpen) {
  const std::set<std::string> before = fault::shmFiles();
  const std::string name = plant("others");
  const pid_t other = holder(name, true);
  ASSERT_GT(other, 0);
  EXPECT_FALSE(fault::descendsFrom(other, getpid()));
  EXPECT_EQ(fault::shmLeftSince(before, "mixccl", kGraceS), "");
  stop(other, false);
  unplant(name);
}

TEST(ShmLeftSince, ReportsANameOnlyThisTestsOwnChildHolds) {
  const std::set<std::string> before = fault::shmFiles();
  const std::string name = plant("own");
  const pid_t child = holder(name, false);
  ASSERT_GT(child, 0);
  EXPECT_TRUE(fault::descendsFrom(child, getpid()));
  EXPECT_EQ(fault::shmLeftSince(before, "mixccl", kGraceS), name);
  stop(child, true);
  unplant(name);
}

}  // namespace
