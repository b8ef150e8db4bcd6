// Tests of the libibverbs calls of the RDMA device scan through a stand-in library: no kernel
// support, no provider library, a listing error, failing opens and queries (every opened device
// closed again, the list freed once), and the system's own library on this host.
#include <endian.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "test_rdma_facts.h"
#include "topology/rdma_facts.h"
#include "topology/rdma_verbs.h"

namespace mixccl {
namespace {

using namespace rdmatest;

struct FakeDevice {
  std::string name;
  int openErrno = 0;             // nonzero: ibv_open_device fails with it
  int queryDeviceRc = 0;
  uint64_t guidBigEndian = 0;
  std::vector<ibv_port_attr> ports;
  std::vector<int> portRc;       // per port, 0 ok
  std::vector<int> gidRc;        // per port, 0 ok
};

struct FakeVerbs {
  int listErrno = 0;             // nonzero: ibv_get_device_list returns NULL with it
  std::vector<FakeDevice> devices;
  std::vector<ibv_device> handles;
  std::vector<ibv_context> contexts;
  int opened = 0, closed = 0, freed = 0;
};
FakeVerbs* gFake = nullptr;

int indexOf(ibv_device* d) { return (int)(d - gFake->handles.data()); }
int indexOf(ibv_context* c) { return (int)(c - gFake->contexts.data()); }

ibv_device** fakeGetDeviceList(int* count) {
  if (gFake->listErrno) {
    errno = gFake->listErrno;
    return nullptr;
  }
  gFake->handles.assign(gFake->devices.size(), ibv_device{});
  gFake->contexts.assign(gFake->devices.size(), ibv_context{});
  auto** list = new ibv_device*[gFake->devices.size() + 1];
  for (size_t i = 0; i < gFake->devices.size(); i++) {
    snprintf(gFake->handles[i].name, sizeof(gFake->handles[i].name), "%s",
             gFake->devices[i].name.c_str());
    list[i] = &gFake->handles[i];
  }
  list[gFake->devices.size()] = nullptr;
  *count = (int)gFake->devices.size();
  return list;
}
void fakeFreeDeviceList(ibv_device** list) {
  gFake->freed++;
  delete[] list;
}
const char* fakeGetDeviceName(ibv_device* d) { return d->name; }
ibv_context* fakeOpenDevice(ibv_device* d) {
  const FakeDevice& f = gFake->devices[indexOf(d)];
  if (f.openErrno) {
    errno = f.openErrno;
    return nullptr;
  }
  gFake->opened++;
  ibv_context* c = &gFake->contexts[indexOf(d)];
  c->device = d;
  return c;
}
int fakeCloseDevice(ibv_context*) {
  gFake->closed++;
  return 0;
}
int fakeQueryDevice(ibv_context* c, ibv_device_attr* attr) {
  const FakeDevice& f = gFake->devices[indexOf(c)];
  if (f.queryDeviceRc) return f.queryDeviceRc;
  attr->node_guid = f.guidBigEndian;
  attr->phys_port_cnt = (uint8_t)f.ports.size();
  return 0;
}
int fakeQueryPort(ibv_context* c, uint8_t port, ibv_port_attr* attr) {
  const FakeDevice& f = gFake->devices[indexOf(c)];
  if (f.portRc[port - 1]) return f.portRc[port - 1];
  *attr = f.ports[port - 1];
  return 0;
}
int fakeQueryGid(ibv_context* c, uint8_t port, int index, ibv_gid* gid) {
  const FakeDevice& f = gFake->devices[indexOf(c)];
  if (index != 0 || f.gidRc[port - 1]) return f.gidRc[port - 1] ? f.gidRc[port - 1] : EINVAL;
  memset(gid->raw, 0, sizeof(gid->raw));
  gid->raw[0] = 0xfe;
  gid->raw[1] = 0x80;
  gid->raw[15] = port;
  return 0;
}

const VerbsApi kFakeApi = {fakeGetDeviceList, fakeFreeDeviceList, fakeGetDeviceName,
                           fakeOpenDevice,    fakeCloseDevice,    fakeQueryDevice,
                           fakeQueryPort,     fakeQueryGid};

ibv_port_attr portAttr(int state, int linkLayer, unsigned speed, unsigned width) {
  ibv_port_attr a;
  memset(&a, 0, sizeof(a));
  a.state = (ibv_port_state)state;
  a.link_layer = (uint8_t)linkLayer;
  a.active_speed = (uint8_t)speed;
  a.active_width = (uint8_t)width;
  return a;
}

class RdmaVerbsScan : public ::testing::Test {
 protected:
  void SetUp() override { gFake = &fake; }
  void TearDown() override { gFake = nullptr; }
  FakeVerbs fake;
};

TEST_F(RdmaVerbsScan, NoKernelSupportIsAnEmptyListNotAFailure) {
  fake.listErrno = ENOSYS;  // what libibverbs says on a host without an RDMA driver
  RdmaScan scan;
  scanRdmaDevices(kFakeApi, "/nonexistent", &scan);
  EXPECT_TRUE(scan.devices.empty());
  EXPECT_EQ(scan.status, "no RDMA devices (libibverbs found none)");
  EXPECT_EQ(fake.freed, 0);
}

TEST_F(RdmaVerbsScan, NoProviderLibraryIsAnEmptyListNotAFailure) {
  // Without provider libraries libibverbs lists no device at all.
  RdmaScan scan;
  scanRdmaDevices(kFakeApi, "/nonexistent", &scan);
  EXPECT_TRUE(scan.devices.empty());
  EXPECT_EQ(scan.status, "no RDMA devices (libibverbs found none)");
  EXPECT_EQ(fake.freed, 1);
}

TEST_F(RdmaVerbsScan, AListingErrorIsNamed) {
  fake.listErrno = EACCES;
  RdmaScan scan;
  scanRdmaDevices(kFakeApi, "/nonexistent", &scan);
  EXPECT_TRUE(scan.devices.empty());
  EXPECT_EQ(scan.status, "no RDMA devices (libibverbs could not list them: Permission denied)");
}

TEST_F(RdmaVerbsScan, DevicesPortsAndFailuresAreRecorded) {
  FakeDevice bad;
  bad.name = "mlx5_0";
  bad.openErrno = ENODEV;
  FakeDevice good;
  good.name = "mlx5_1";
  good.guidBigEndian = htobe64(0x0002c90300102030ull);
  good.ports = {portAttr(kActive, kInfiniBand, kHdr, k4x), portAttr(kDown, kEthernet, 1, 1),
                portAttr(kActive, kEthernet, kEdr, k4x)};
  good.portRc = {0, 0, EINVAL};
  good.gidRc = {0, ENOENT, 0};
  FakeDevice noQuery;
  noQuery.name = "mlx5_2";
  noQuery.queryDeviceRc = EIO;
  fake.devices = {bad, good, noQuery};
  RdmaScan scan;
  scanRdmaDevices(kFakeApi, "/nonexistent", &scan);
  ASSERT_EQ(scan.devices.size(), 3u);
  EXPECT_EQ(scan.devices[0].name, "mlx5_0");
  EXPECT_EQ(scan.devices[0].error, "ibv_open_device failed: No such device");
  EXPECT_TRUE(scan.devices[0].ports.empty());
  const RdmaDeviceFacts& g = scan.devices[1];
  EXPECT_EQ(g.error, "");
  EXPECT_EQ(g.nodeGuid, 0x0002c90300102030ull);  // host order after be64toh
  ASSERT_EQ(g.ports.size(), 3u);
  EXPECT_EQ(g.ports[0].port, 1);
  EXPECT_EQ(g.ports[0].state, kActive);
  EXPECT_EQ(g.ports[0].linkLayer, kInfiniBand);
  EXPECT_EQ(g.ports[0].activeSpeed, kHdr);
  EXPECT_EQ(g.ports[0].activeWidth, k4x);
  EXPECT_TRUE(g.ports[0].hasGid);
  EXPECT_EQ(g.ports[0].gid[15], 1);
  EXPECT_FALSE(g.ports[1].hasGid);       // no GID: unknown, not an error
  EXPECT_EQ(g.ports[1].error, "");
  EXPECT_EQ(g.ports[2].error, "ibv_query_port failed: Invalid argument");
  EXPECT_EQ(scan.devices[2].error, "ibv_query_device failed: Input/output error");
  // Every device that was opened is closed again; the list is freed once.
  EXPECT_EQ(fake.opened, 2);
  EXPECT_EQ(fake.closed, 2);
  EXPECT_EQ(fake.freed, 1);
  EXPECT_EQ(scan.status, "");
}

TEST(RdmaVerbs, TheSystemLibraryAnswersOnThisHost) {
  // Whatever this host has, the real calls return and never fail discovery.
  RdmaScan scan;
  scanRdmaDevices(systemVerbsApi(), "/sys", &scan);
  struct stat st;
  if (stat("/sys/class/infiniband", &st) != 0) {
    EXPECT_TRUE(scan.devices.empty());
    EXPECT_EQ(scan.status, "no RDMA devices (libibverbs found none)");
  }
  for (const RdmaDeviceFacts& d : scan.devices) EXPECT_FALSE(d.name.empty());
}

}  // namespace
}  // namespace mixccl
