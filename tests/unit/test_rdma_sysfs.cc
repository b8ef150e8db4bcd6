// Tests of the RDMA facts read from sysfs, on a temporary directory of sysfs' shape: the PCI
// function, its NUMA node and interfaces, the GID's interface, and the defaults where files are
// missing.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "topology/rdma_facts.h"

namespace mixccl {
namespace {

int shell(const std::string& cmd) { return system(cmd.c_str()); }

struct FakeSysfs {
  std::string root;
  FakeSysfs() {
    char dir[] = "/tmp/mixccl_rdma_sysfs_XXXXXX";
    root = mkdtemp(dir) ? dir : "";
  }
  ~FakeSysfs() {
    if (!root.empty()) shell("rm -rf '" + root + "'");
  }
  void mkdirs(const std::string& rel) {
    ASSERT_EQ(shell("mkdir -p '" + root + "/" + rel + "'"), 0) << rel;
  }
  void write(const std::string& rel, const std::string& text) {
    FILE* f = fopen((root + "/" + rel).c_str(), "w");
    ASSERT_NE(f, nullptr) << rel;
    fputs(text.c_str(), f);
    fclose(f);
  }
  void link(const std::string& target, const std::string& rel) {
    ASSERT_EQ(symlink(target.c_str(), (root + "/" + rel).c_str()), 0) << rel;
  }
};

TEST(RdmaSysfs, PciFunctionNumaNodeAndInterfaces) {
  FakeSysfs fs;
  ASSERT_FALSE(fs.root.empty());
  const std::string fn = "devices/pci0000:00/0000:00:01.0/0000:03:00.0";
  fs.mkdirs(fn + "/net/ens3f0");
  fs.mkdirs(fn + "/net/ens3f1");
  fs.write(fn + "/numa_node", "1\n");
  fs.write(fn + "/net/ens3f0/dev_port", "0\n");
  fs.write(fn + "/net/ens3f1/dev_port", "1\n");
  fs.mkdirs("class/infiniband/mlx4_0/ports/1/gid_attrs/ndevs");
  fs.mkdirs("class/infiniband/mlx4_0/ports/2/gid_attrs/ndevs");
  fs.write("class/infiniband/mlx4_0/ports/1/gid_attrs/ndevs/0", "ens3f0\n");
  fs.link("../../../" + fn, "class/infiniband/mlx4_0/device");

  RdmaDeviceFacts f;
  f.name = "mlx4_0";
  f.ports.resize(2);
  f.ports[0].port = 1;
  f.ports[1].port = 2;
  readRdmaSysfs(fs.root, &f);
  EXPECT_EQ(f.pciBusId, "0000:03:00.0");
  EXPECT_EQ(f.sysfsNumaNode, 1);
  ASSERT_EQ(f.netdevs.size(), 2u);
  EXPECT_EQ(f.netdevs[0].name, "ens3f0");
  EXPECT_EQ(f.netdevs[0].devPort, 0);
  EXPECT_EQ(f.netdevs[1].name, "ens3f1");
  EXPECT_EQ(f.netdevs[1].devPort, 1);
  EXPECT_EQ(f.ports[0].gidNetdev, "ens3f0");
  EXPECT_EQ(f.ports[1].gidNetdev, "");  // no GID 0 interface (IB, or none yet)
}

TEST(RdmaSysfs, MissingFilesLeaveTheDefaults) {
  FakeSysfs fs;
  ASSERT_FALSE(fs.root.empty());
  // A device whose parent is not a PCI function (software RDMA) and no numa_node.
  fs.mkdirs("devices/virtual/rxe");
  fs.mkdirs("class/infiniband/rxe0");
  fs.link("../../../devices/virtual/rxe", "class/infiniband/rxe0/device");
  fs.write("devices/virtual/rxe/numa_node", "-1\n");
  RdmaDeviceFacts f;
  f.name = "rxe0";
  readRdmaSysfs(fs.root, &f);
  EXPECT_EQ(f.pciBusId, "");
  EXPECT_EQ(f.sysfsNumaNode, -1);
  EXPECT_TRUE(f.netdevs.empty());
  RdmaDeviceFacts g;
  g.name = "absent0";
  readRdmaSysfs(fs.root, &g);
  EXPECT_EQ(g.pciBusId, "");
  EXPECT_EQ(g.sysfsNumaNode, -1);
}

}  // namespace
}  // namespace mixccl
