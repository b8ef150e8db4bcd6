// The host topology (hwloc): what this host has, where the rank's device and NIC sit on the PCI
// tree, and a fixed-size summary that every rank sends to all others at init.
//
// This layer depends only on hwloc, libibverbs (RDMA devices), libc, bootstrap/peer_info (the
// host hash) and the header-only nlohmann-json; it never logs and never touches communicator state, so tools can compile it on
// its own (tools/topo builds it into a separate static library). A failing call returns a Result
// and leaves a message for topologyLastError(); the caller decides whether and how to log it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/result.h"

namespace mixccl {

// The message of the last failed topology call of the calling thread ("" if none).
const std::string& topologyLastError();

// ---------------------------------------------------------------------------------------------
// Local topology
// ---------------------------------------------------------------------------------------------

struct TopoPackage {
  int osIndex = -1;
  std::string cpuModel;          // "" when hwloc does not know it
  int cores = 0;
  int pus = 0;
  std::vector<int> numaNodes;    // os indexes of the NUMA nodes inside
};

// Data/unified cache levels as hwloc reports them (0: not reported, e.g. by some VMs). Of each
// level the smallest instance, and how many cores share it: the size one core can count on.
struct TopoCacheLevel {
  uint64_t bytes = 0;
  int cores = 0;                 // cores sharing that instance (0: unknown)
  int instances = 0;
};
struct TopoCaches {
  TopoCacheLevel l2, l3;
};

struct TopoNumaNode {
  int osIndex = -1;
  uint64_t memoryBytes = 0;
  std::string cpus;              // list form, "0-3,8-11"
  int cores = 0;
  int pus = 0;
};

// One object of the PCI tree, in depth-first order (a parent comes before its children).
struct TopoPciObject {
  enum Kind { kHostBridge, kPciBridge, kDevice };
  Kind kind = kDevice;
  std::string busId;             // "0000:03:00.0"; "" for host bridges
  std::string downstream;        // bridges: the bus range below, "0000:[01-03]"
  int parent = -1;               // index in LocalTopology::pci, -1: attached to the CPU side
  int level = 0;                 // nesting level (0: attached to the CPU side)
  unsigned classId = 0;          // PCI class << 8 | subclass, e.g. 0x0200 Ethernet
  unsigned vendorId = 0;
  unsigned deviceId = 0;
  float linkGBps = 0;            // hwloc's link speed, 0 when unknown
  int numaNode = -1;             // NUMA node of the CPU-side attachment, -1: several or unknown
  std::string name;              // vendor/device names when hwloc knows them
  std::vector<std::string> osDevices;  // "eth0", "mlx5_0", "card0", ...
};

struct TopoNic {
  std::string name;              // interface name
  std::string pciBusId;          // "" for virtual interfaces (lo, veth, bridges, ...)
  int numaNode = -1;
  std::string mac;
  std::vector<std::string> addresses;  // IPv4/IPv6 addresses (this system only)
  bool up = false;
  std::string rdmaDevice;        // the RDMA device this interface belongs to, if any
  int rdmaPort = 0;              // its port behind this interface, 0: none or unknown
};

// An RDMA port as libibverbs reports it (rdma_facts.h holds the raw values and the decoding).
struct TopoRdmaPort {
  int port = 0;                  // 1-based
  std::string state;             // "active", "down", "init", "armed", ... ("" unknown)
  std::string linkLayer;         // "InfiniBand", "Ethernet" (RoCE); "" unknown
  std::string speed;             // "HDR", ... ("" unknown)
  int width = 0;                 // lanes (1, 2, 4, 8, 12), 0 unknown
  double gbps = 0;               // width x lane rate, e.g. 4x HDR = 200; 0 unknown
  std::string gid;               // GID index 0, "fe80:0000:..."; "" unknown
  std::string netDevice;         // the network interface of this port, "" none or unknown
  std::string error;             // why the port could not be queried ("" none)
  bool active() const { return state == "active"; }
};

struct TopoRdmaDevice {
  std::string name;              // "mlx5_0"
  std::string nodeGuid;          // "0002:c903:0010:2030", "" unknown
  std::string pciBusId;
  bool onPciTree = false;        // pciBusId is a function of LocalTopology::pci
  int numaNode = -1;
  std::vector<TopoRdmaPort> ports;
  std::vector<std::string> netDevices;
  std::string error;             // why the device could not be opened or queried ("" none)
};

struct TopoAccelerator {
  std::string pciBusId;
  unsigned classId = 0;
  unsigned vendorId = 0;
  unsigned deviceId = 0;
  int numaNode = -1;
  std::string name;
  std::vector<std::string> osDevices;
};

struct TopologyHandle;  // the hwloc topology, kept for distances and binding

struct LocalTopology {
  std::string hostname;
  uint64_t hostHash = 0;         // equals PeerInfo::hostHash of this process (0 for XML input)
  bool thisSystem = false;       // discovered here (false: loaded from XML)
  std::string hwlocVersion;
  std::vector<TopoPackage> packages;
  std::vector<TopoNumaNode> numaNodes;
  int cores = 0;
  int pus = 0;
  TopoCaches caches;
  std::vector<TopoPciObject> pci;
  std::vector<TopoNic> nics;
  std::vector<TopoRdmaDevice> rdma;
  std::string rdmaStatus;        // why the list is what it is, e.g. "no RDMA devices (libibverbs found none)"
  std::vector<TopoAccelerator> accelerators;
  int threadNumaNode = -1;       // NUMA node of the calling thread at discovery, -1: unknown
  std::string threadCpus;        // CPUs the calling thread may run on, list form
  std::shared_ptr<TopologyHandle> handle;
};

// Discovers this host: packages, NUMA nodes, cores, the PCI tree, network interfaces (hwloc's
// plus the kernel's virtual ones), RDMA devices (libibverbs and sysfs), accelerators. A host
// without RDMA (no device, no kernel support, no provider library) has an empty list and says
// so in rdmaStatus; it is never a failure.
Result discoverLocalTopology(LocalTopology* out);

// The same from an hwloc XML document (tests, or a saved topology). Nothing of the running
// system is merged in; binding is refused on such a topology.
Result loadTopologyFromXml(const std::string& xml, LocalTopology* out);

// ---------------------------------------------------------------------------------------------
// NIC choice and binding
// ---------------------------------------------------------------------------------------------

// How far two PCI objects are apart, nearest first.
enum class PciDistance : uint8_t {
  kSameDevice = 0,   // the same PCI function
  kPciSwitch = 1,    // meet below a PCI(e) switch / PCI-PCI bridge
  kHostBridge = 2,   // meet at one host bridge
  kNumaNode = 3,     // different host bridges of one NUMA node
  kSystem = 4,       // across NUMA nodes or packages
  kUnknown = 5,      // no PCI position (virtual interface, no device)
};
const char* pciDistanceName(PciDistance d);

struct NicChoice {
  std::string name;
  std::string pciBusId;          // "" when the chosen interface has none
  int numaNode = -1;
  PciDistance distance = PciDistance::kUnknown;
  int hops = -1;                 // tree edges between device and NIC, -1: unknown
  bool byPciDistance = false;    // false: the fallback (the socket layer's choice) was taken
  std::string rdmaDevice;        // the active RDMA port behind the chosen NIC, if any
  int rdmaPort = 0;
  double rdmaGbps = 0;
  std::string reason;            // one readable line
};

// Picks, among candidates (interface names in the socket layer's order of preference), the one
// nearest on the PCI tree to the device at devicePciBusId: smallest PciDistance; at the same
// PciDistance a NIC with an active RDMA port beats one without, and a faster port a slower one;
// then fewest hops, then earliest in candidates. Takes fallback (the socket layer's interface) when there is
// no device bus id, the device is not in the topology, or no candidate has a PCI position; an
// empty fallback means candidates[0]. Fails only when there is nothing at all to choose.
Result chooseNic(const LocalTopology& local, const std::string& devicePciBusId,
                 const std::vector<std::string>& candidates, const std::string& fallback,
                 NicChoice* out);

// The distance between two PCI functions of the topology (kUnknown if either is absent).
PciDistance pciDistance(const LocalTopology& local, const std::string& busIdA,
                        const std::string& busIdB, int* hops);

struct BindPlan {
  bool bind = false;             // true: binding to cpus would narrow the thread's placement
  int numaNode = -1;             // NUMA node of target, -1 unknown
  std::string cpus;              // list form of the CPUs near target
  std::string note;              // one readable line: what was done or why nothing was
};

// Where a thread serving target (a NIC name or a PCI bus id) should run: the CPUs of the
// CPU-side object the target hangs off. No binding is planned with one NUMA node, for an unknown
// or virtual target, or when those CPUs are the whole machine.
Result planBindNear(const LocalTopology& local, const std::string& target, BindPlan* out);

// Plans as above and binds the calling thread (hwloc_set_cpubind, thread scope) when the plan
// says so. With nothing to do it succeeds with bind == false and the reason in note.
Result bindThreadNear(const LocalTopology& local, const std::string& target, BindPlan* out);

// NUMA node (os index) the calling thread runs on now, -1 when unknown.
int currentNumaNode(const LocalTopology& local);

// ---------------------------------------------------------------------------------------------
// The per-rank wire summary
// ---------------------------------------------------------------------------------------------

constexpr size_t kRankTopologyWireBytes = 256;
constexpr uint32_t kRankTopologyMagic = 0x5054584du;  // "MXTP" little endian
constexpr uint16_t kRankTopologyVersion = 1;

struct RankTopology {
  int32_t rank = -1;
  int32_t device = -1;           // device index as the adaptor numbers it, -1: none
  uint64_t hostHash = 0;
  int32_t numaNode = -1;         // of the rank's thread at init
  int32_t nicNumaNode = -1;
  int32_t deviceNumaNode = -1;
  int32_t nicHops = -1;
  PciDistance nicDistance = PciDistance::kUnknown;
  bool nicByPci = false;
  char hostname[72] = {};
  char nicName[24] = {};
  char nicPciBusId[24] = {};
  char devicePciBusId[24] = {};
  char adaptor[24] = {};
};

// Fills the summary of this rank. Fails (InvalidArgument) when a text does not fit its field.
Result fillRankTopology(const LocalTopology& local, int rank, const std::string& adaptor,
                        int device, const std::string& devicePciBusId, const NicChoice& nic,
                        RankTopology* out);

// Writes exactly kRankTopologyWireBytes bytes (little endian, checksummed). Fails on values the
// decoder would refuse.
Result encodeRankTopology(const RankTopology& in, uint8_t* out, size_t outLen);

// Checks everything before accepting: length, magic, version, checksum, every text field
// NUL-terminated, zero-padded and printable, reserved bytes zero, numbers in range.
Result decodeRankTopology(const uint8_t* in, size_t len, RankTopology* out);

// ---------------------------------------------------------------------------------------------
// Reports
// ---------------------------------------------------------------------------------------------

// What a report shows: the local topology, the job's table, or both. rank: the rank that
// writes the report (-1: not part of a job).
// The transport of one pair of the dumping rank (chosen at init, transport/net_choice.h).
struct TopologyTransport {
  int peer = -1;
  std::string transport;  // "shm", "ucx", "socket"
  std::string why;
};

struct TopologyView {
  const LocalTopology* local = nullptr;
  const std::vector<RankTopology>* ranks = nullptr;
  int rank = -1;
  const std::vector<TopologyTransport>* transports = nullptr;  // JSON "transports", if set
};

// JSON, schema "mixccl-topology/1" (docs/topology.md).
std::string topologyToJson(const TopologyView& view);
// Readable text.
std::string topologyToText(const TopologyView& view);

// The file a rank writes for MIXCCL_TOPO_DUMP_FILE=pattern. "%r" is replaced by the rank, "%h"
// by the hostname, "%p" by the process id, "%%" by "%". Without %r and %p only one rank writes:
// with %h the lowest rank of each host, otherwise rank 0. Returns false when this rank writes
// nothing.
bool topologyDumpPath(const std::string& pattern, int rank,
                      const std::vector<RankTopology>& ranks, std::string* path);

// Writes topologyToJson(view) to path atomically (a temporary file renamed into place).
Result writeTopologyDump(const std::string& path, const TopologyView& view);

}  // namespace mixccl
