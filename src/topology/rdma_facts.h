// RDMA devices as plain facts: what libibverbs and sysfs say about each device and port, with
// the raw enum values kept as numbers. Everything after the facts (decoding, placing the devices
// on the PCI tree, merging them with the NICs) is pure logic over these structs, so tests can
// inject any device description without hardware; only rdma_verbs.cc talks to libibverbs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "topology/topology.h"

namespace mixccl {

// One port as ibv_query_port and ibv_query_gid (index 0) report it.
struct RdmaPortFacts {
  int port = 0;                  // 1-based, as libibverbs numbers ports
  std::string error;             // ibv_query_port failed: the rest is unknown
  int state = 0;                 // enum ibv_port_state (4: IBV_PORT_ACTIVE)
  int linkLayer = 0;             // IBV_LINK_LAYER_* (0 unspecified, 1 InfiniBand, 2 Ethernet)
  unsigned activeSpeed = 0;      // ibv_port_attr::active_speed (a bit: 1 SDR ... 128 NDR, 256 XDR)
  unsigned activeWidth = 0;      // ibv_port_attr::active_width (a bit: 1 1x, 2 4x, 4 8x, 8 12x, 16 2x)
  bool hasGid = false;           // ibv_query_gid(port, 0) succeeded
  uint8_t gid[16] = {};
  // sysfs ports/<n>/gid_attrs/ndevs/0: the interface of GID 0 (RoCE only; also names the
  // interface of software RoCE, whose device has no device/net/).
  std::string gidNetdev;
};

// A network interface of the device's PCI function (/sys/class/infiniband/<dev>/device/net/).
struct RdmaNetdevFacts {
  std::string name;
  int devPort = -1;              // /sys/class/net/<name>/dev_port: 0-based port, -1 unknown
};

struct RdmaDeviceFacts {
  std::string name;              // "mlx5_0"
  uint64_t nodeGuid = 0;         // host byte order
  std::string error;             // opening or querying the device failed: no ports known
  std::vector<RdmaPortFacts> ports;
  // From sysfs.
  std::string pciBusId;          // last component of realpath(/sys/class/infiniband/<dev>/device)
  int sysfsNumaNode = -1;        // <device>/numa_node, -1 unknown
  std::vector<RdmaNetdevFacts> netdevs;
};

// The result of one scan of the host. An empty device list is normal (no RDMA hardware, no
// kernel support, no provider libraries); status then says why in one line.
struct RdmaScan {
  std::vector<RdmaDeviceFacts> devices;
  std::string status;
};

// The status of a scan that found nothing because libibverbs listed no device.
extern const char* const kRdmaNoneFound;  // "no RDMA devices (libibverbs found none)"

// ---------------------------------------------------------------------------------------------
// Decoding the raw values (rdma_decode.cc)

// Per-lane data rate of an active_speed value in Gb/s (SDR 2.5 ... XDR 200); 0 when unknown.
double rdmaLaneGbps(unsigned activeSpeed);
// "SDR", "DDR", "QDR", "FDR10", "FDR", "EDR", "HDR", "NDR", "XDR"; "" when unknown.
const char* rdmaSpeedName(unsigned activeSpeed);
// Lanes of an active_width value (1, 2, 4, 8, 12); 0 when unknown.
int rdmaWidthLanes(unsigned activeWidth);
// Lanes x lane rate, e.g. 4x HDR = 200; 0 when either is unknown.
double rdmaPortGbps(unsigned activeSpeed, unsigned activeWidth);
// "down", "init", "armed", "active", "active-defer", "nop"; "unknown" otherwise.
const char* rdmaPortStateName(int state);
// "InfiniBand" or "Ethernet" (RoCE).
const char* rdmaLinkLayerName(int linkLayer);
// Only IBV_PORT_ACTIVE carries traffic.
bool rdmaPortStateActive(int state);
// "fe80:0000:0000:0000:0202:c9ff:fe00:0001", the form sysfs and ibv_devinfo use.
std::string rdmaGidText(const uint8_t gid[16]);
// "0002:c903:0010:2030", the form ibv_devinfo uses.
std::string rdmaGuidText(uint64_t guid);

// ---------------------------------------------------------------------------------------------
// Placing (rdma_placement.cc)

// Replaces local->rdma with the scanned devices, placed on the PCI tree that hwloc built:
// matched by PCI bus id (the device's name joins that function's OS devices), NUMA node from
// the tree (sysfs or hwloc's own record when the tree lacks the function), each port decoded
// and given its network interface; every NIC that is one of a device's interfaces gets
// rdmaDevice/rdmaPort (and the device's PCI position when it had none). Sets local->rdmaStatus.
void placeRdmaDevices(const RdmaScan& scan, LocalTopology* local);

// The port behind a NIC when it is active, for the NIC choice; nullptr for a plain NIC, a NIC
// whose RDMA ports are all down, or a name that is not a NIC of local.
const TopoRdmaPort* activeRdmaPortOfNic(const LocalTopology& local, const std::string& nicName,
                                        const TopoRdmaDevice** device);

// ---------------------------------------------------------------------------------------------
// Gathering the sysfs facts (rdma_sysfs.cc)

// Fills pciBusId, sysfsNumaNode, netdevs and each listed port's gidNetdev of facts->name from
// sysfsRoot ("/sys" on a real host; a directory of the same shape in tests). Missing files
// leave the defaults.
void readRdmaSysfs(const std::string& sysfsRoot, RdmaDeviceFacts* facts);

// Whether two PCI bus ids name the same function ("0000:03:00.0" == "03:00.0" == "0000:3:0.0").
bool samePciBusId(const std::string& a, const std::string& b);

}  // namespace mixccl
