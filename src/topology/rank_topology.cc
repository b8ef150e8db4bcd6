// The fixed-size summary of one rank's placement that every rank sends to all others.
//
// Wire layout (kRankTopologyWireBytes = 256, every integer little endian):
//   0 magic u32 | 4 version u16 | 6 length u16 | 8 rank i32 | 12 device i32 | 16 hostHash u64
//  24 numaNode i32 | 28 nicNumaNode i32 | 32 deviceNumaNode i32 | 36 nicHops i32
//  40 nicDistance u8 | 41 flags u8 (bit 0: NIC chosen by PCI distance) | 42..47 zero
//  48 hostname[72] | 120 nicName[24] | 144 nicPciBusId[24] | 168 devicePciBusId[24]
// 192 adaptor[24] | 216..251 zero | 252 checksum u32 (FNV-1a over bytes 0..251)
#include <cstring>
#include <string>

#include "topology/topology_internal.h"

namespace mixccl {
namespace {

constexpr size_t kOffHostname = 48;
constexpr size_t kOffNicName = 120;
constexpr size_t kOffNicBus = 144;
constexpr size_t kOffDevBus = 168;
constexpr size_t kOffAdaptor = 192;
constexpr size_t kOffReserved2 = 216;
constexpr size_t kOffChecksum = 252;
static_assert(kOffAdaptor + sizeof(RankTopology::adaptor) == kOffReserved2, "layout");
static_assert(kOffChecksum + 4 == kRankTopologyWireBytes, "layout");

void put16(uint8_t* p, uint16_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
}
void put32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
void put64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
uint16_t get16(const uint8_t* p) { return (uint16_t)(p[0] | (p[1] << 8)); }
uint32_t get32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; i++) v |= (uint32_t)p[i] << (8 * i);
  return v;
}
uint64_t get64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

uint32_t fnv1a32(const uint8_t* p, size_t n) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < n; i++) {
    h ^= p[i];
    h *= 16777619u;
  }
  return h;
}

// A text field: printable ASCII, NUL-terminated inside the field, zero after the terminator.
bool validText(const char* f, size_t n) {
  size_t len = strnlen(f, n);
  if (len == n) return false;
  for (size_t i = 0; i < len; i++)
    if ((unsigned char)f[i] < 0x20 || (unsigned char)f[i] > 0x7e) return false;
  for (size_t i = len; i < n; i++)
    if (f[i] != 0) return false;
  return true;
}

template <size_t N>
Result setText(char (&dst)[N], const std::string& src, const char* field) {
  if (src.size() >= N)
    return topoError(mixcclInvalidArgument, "%s '%s' is longer than %zu characters", field,
                     src.c_str(), N - 1);
  for (unsigned char c : src)
    if (c < 0x20 || c > 0x7e)
      return topoError(mixcclInvalidArgument, "%s '%s' holds a character that is not printable",
                       field, src.c_str());
  memset(dst, 0, N);
  memcpy(dst, src.data(), src.size());
  return mixcclSuccess;
}

Result checkValues(const RankTopology& t) {
  struct Field {
    const char* data;
    size_t size;
    const char* name;
  } fields[] = {{t.hostname, sizeof(t.hostname), "hostname"},
                {t.nicName, sizeof(t.nicName), "nicName"},
                {t.nicPciBusId, sizeof(t.nicPciBusId), "nicPciBusId"},
                {t.devicePciBusId, sizeof(t.devicePciBusId), "devicePciBusId"},
                {t.adaptor, sizeof(t.adaptor), "adaptor"}};
  for (const Field& f : fields)
    if (!validText(f.data, f.size))
      return topoError(mixcclInvalidArgument,
                       "rank topology: field %s is not a terminated, zero-padded printable text",
                       f.name);
  if (t.rank < 0) return topoError(mixcclInvalidArgument, "rank topology: rank %d", (int)t.rank);
  if (t.device < -1)
    return topoError(mixcclInvalidArgument, "rank topology: device %d", (int)t.device);
  if (t.numaNode < -1 || t.nicNumaNode < -1 || t.deviceNumaNode < -1 || t.nicHops < -1)
    return topoError(mixcclInvalidArgument, "rank topology: a NUMA node or hop count below -1");
  if ((unsigned)t.nicDistance > (unsigned)PciDistance::kUnknown)
    return topoError(mixcclInvalidArgument, "rank topology: NIC distance %u out of range",
                     (unsigned)t.nicDistance);
  return mixcclSuccess;
}

}  // namespace

Result fillRankTopology(const LocalTopology& local, int rank, const std::string& adaptor,
                        int device, const std::string& devicePciBusId, const NicChoice& nic,
                        RankTopology* out) {
  clearTopoError();
  if (!out) return topoError(mixcclInvalidArgument, "fillRankTopology: out is NULL");
  RankTopology t;
  t.rank = rank;
  t.device = device;
  t.hostHash = local.hostHash;
  t.numaNode = local.thisSystem ? currentNumaNode(local) : local.threadNumaNode;
  t.nicNumaNode = nic.numaNode;
  t.nicHops = nic.hops;
  t.nicDistance = nic.distance;
  t.nicByPci = nic.byPciDistance;
  if (!devicePciBusId.empty() && local.handle && local.handle->topo) {
    if (hwloc_obj_t o = findPciObject(local.handle->topo, devicePciBusId))
      t.deviceNumaNode = numaNodeOfIo(local.handle->topo, o);
  }
  MIXCCL_CHECK(setText(t.hostname, local.hostname, "hostname"));
  MIXCCL_CHECK(setText(t.nicName, nic.name, "NIC name"));
  MIXCCL_CHECK(setText(t.nicPciBusId, nic.pciBusId, "NIC PCI bus id"));
  MIXCCL_CHECK(setText(t.devicePciBusId, devicePciBusId, "device PCI bus id"));
  MIXCCL_CHECK(setText(t.adaptor, adaptor, "adaptor"));
  MIXCCL_CHECK(checkValues(t));
  *out = t;
  return mixcclSuccess;
}

Result encodeRankTopology(const RankTopology& in, uint8_t* out, size_t outLen) {
  clearTopoError();
  if (!out || outLen < kRankTopologyWireBytes)
    return topoError(mixcclInvalidArgument, "encodeRankTopology: buffer of %zu bytes, need %zu",
                     out ? outLen : (size_t)0, kRankTopologyWireBytes);
  MIXCCL_CHECK(checkValues(in));
  uint8_t* p = out;
  memset(p, 0, kRankTopologyWireBytes);
  put32(p + 0, kRankTopologyMagic);
  put16(p + 4, kRankTopologyVersion);
  put16(p + 6, (uint16_t)kRankTopologyWireBytes);
  put32(p + 8, (uint32_t)in.rank);
  put32(p + 12, (uint32_t)in.device);
  put64(p + 16, in.hostHash);
  put32(p + 24, (uint32_t)in.numaNode);
  put32(p + 28, (uint32_t)in.nicNumaNode);
  put32(p + 32, (uint32_t)in.deviceNumaNode);
  put32(p + 36, (uint32_t)in.nicHops);
  p[40] = (uint8_t)in.nicDistance;
  p[41] = in.nicByPci ? 1 : 0;
  memcpy(p + kOffHostname, in.hostname, sizeof(in.hostname));
  memcpy(p + kOffNicName, in.nicName, sizeof(in.nicName));
  memcpy(p + kOffNicBus, in.nicPciBusId, sizeof(in.nicPciBusId));
  memcpy(p + kOffDevBus, in.devicePciBusId, sizeof(in.devicePciBusId));
  memcpy(p + kOffAdaptor, in.adaptor, sizeof(in.adaptor));
  put32(p + kOffChecksum, fnv1a32(p, kOffChecksum));
  return mixcclSuccess;
}

Result decodeRankTopology(const uint8_t* in, size_t len, RankTopology* out) {
  clearTopoError();
  if (!in || !out) return topoError(mixcclInvalidArgument, "decodeRankTopology: NULL argument");
  if (len != kRankTopologyWireBytes)
    return topoError(mixcclInvalidArgument, "rank topology: %zu bytes, expected %zu", len,
                     kRankTopologyWireBytes);
  if (get32(in) != kRankTopologyMagic)
    return topoError(mixcclInvalidArgument, "rank topology: bad magic 0x%08x", get32(in));
  if (get16(in + 4) != kRankTopologyVersion)
    return topoError(mixcclInvalidArgument, "rank topology: version %u, this build reads %u",
                     get16(in + 4), kRankTopologyVersion);
  if (get16(in + 6) != kRankTopologyWireBytes)
    return topoError(mixcclInvalidArgument, "rank topology: length field %u", get16(in + 6));
  uint32_t sum = fnv1a32(in, kOffChecksum);
  if (get32(in + kOffChecksum) != sum)
    return topoError(mixcclInvalidArgument, "rank topology: checksum mismatch (corrupted)");
  for (size_t i = 42; i < kOffHostname; i++)
    if (in[i]) return topoError(mixcclInvalidArgument, "rank topology: reserved byte %zu set", i);
  for (size_t i = kOffReserved2; i < kOffChecksum; i++)
    if (in[i]) return topoError(mixcclInvalidArgument, "rank topology: reserved byte %zu set", i);
  if (in[41] > 1) return topoError(mixcclInvalidArgument, "rank topology: unknown flags 0x%02x", in[41]);
  RankTopology t;
  t.rank = (int32_t)get32(in + 8);
  t.device = (int32_t)get32(in + 12);
  t.hostHash = get64(in + 16);
  t.numaNode = (int32_t)get32(in + 24);
  t.nicNumaNode = (int32_t)get32(in + 28);
  t.deviceNumaNode = (int32_t)get32(in + 32);
  t.nicHops = (int32_t)get32(in + 36);
  if (in[40] > (uint8_t)PciDistance::kUnknown)
    return topoError(mixcclInvalidArgument, "rank topology: NIC distance %u out of range", in[40]);
  t.nicDistance = (PciDistance)in[40];
  t.nicByPci = in[41] == 1;
  memcpy(t.hostname, in + kOffHostname, sizeof(t.hostname));
  memcpy(t.nicName, in + kOffNicName, sizeof(t.nicName));
  memcpy(t.nicPciBusId, in + kOffNicBus, sizeof(t.nicPciBusId));
  memcpy(t.devicePciBusId, in + kOffDevBus, sizeof(t.devicePciBusId));
  memcpy(t.adaptor, in + kOffAdaptor, sizeof(t.adaptor));
  MIXCCL_CHECK(checkValues(t));
  *out = t;
  return mixcclSuccess;
}

}  // namespace mixccl
