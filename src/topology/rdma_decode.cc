// Decoding libibverbs' raw port values into words and Gb/s.
//
// active_speed and active_width are single bits of the InfiniBand PortInfo encodings, which
// libibverbs passes through unchanged (RoCE drivers map their Ethernet speed onto the same
// pairs, 100GbE as 4x EDR). verbs.h names none of them, so the values are spelled out here as
// the ibv_query_port manual lists them; the lane rates are the data rates ibv_devinfo prints
// (FDR 14, not its 14.0625 signalling rate), so that 4x HDR reads 200 as everyone quotes it.
#include <cstdio>
#include <string>

#include "topology/rdma_facts.h"

namespace mixccl {
namespace {

struct SpeedEntry {
  unsigned value;
  const char* name;
  double laneGbps;
};

constexpr SpeedEntry kSpeeds[] = {
    {1, "SDR", 2.5},     {2, "DDR", 5.0},   {4, "QDR", 10.0},  {8, "FDR10", 10.0},
    {16, "FDR", 14.0},   {32, "EDR", 25.0}, {64, "HDR", 50.0}, {128, "NDR", 100.0},
    {256, "XDR", 200.0},  // only in active_speed_ex (rdma-core 50+); active_speed is 8 bits
};

const SpeedEntry* speedEntry(unsigned v) {
  for (const SpeedEntry& e : kSpeeds)
    if (e.value == v) return &e;
  return nullptr;
}

}  // namespace

const char* const kRdmaNoneFound = "no RDMA devices (libibverbs found none)";

double rdmaLaneGbps(unsigned activeSpeed) {
  const SpeedEntry* e = speedEntry(activeSpeed);
  return e ? e->laneGbps : 0.0;
}

const char* rdmaSpeedName(unsigned activeSpeed) {
  const SpeedEntry* e = speedEntry(activeSpeed);
  return e ? e->name : "";
}

int rdmaWidthLanes(unsigned activeWidth) {
  switch (activeWidth) {
    case 1: return 1;
    case 2: return 4;
    case 4: return 8;
    case 8: return 12;
    case 16: return 2;  // added after 12x, hence the odd bit
  }
  return 0;
}

double rdmaPortGbps(unsigned activeSpeed, unsigned activeWidth) {
  return rdmaLaneGbps(activeSpeed) * rdmaWidthLanes(activeWidth);
}

const char* rdmaPortStateName(int state) {
  switch (state) {
    case 0: return "nop";
    case 1: return "down";
    case 2: return "init";
    case 3: return "armed";
    case 4: return "active";
    case 5: return "active-defer";
  }
  return "unknown";
}

bool rdmaPortStateActive(int state) { return state == 4; }

const char* rdmaLinkLayerName(int linkLayer) {
  // Kernels before link layers existed report "unspecified"; those were all InfiniBand, and
  // libibverbs' own tools print it so.
  return linkLayer == 2 ? "Ethernet" : "InfiniBand";
}

std::string rdmaGidText(const uint8_t gid[16]) {
  char buf[48];
  int n = 0;
  for (int i = 0; i < 16; i += 2)
    n += snprintf(buf + n, sizeof(buf) - (size_t)n, "%s%02x%02x", i ? ":" : "", gid[i], gid[i + 1]);
  return std::string(buf, (size_t)n);
}

std::string rdmaGuidText(uint64_t guid) {
  char buf[24];
  snprintf(buf, sizeof(buf), "%04x:%04x:%04x:%04x", (unsigned)(guid >> 48) & 0xffff,
           (unsigned)(guid >> 32) & 0xffff, (unsigned)(guid >> 16) & 0xffff,
           (unsigned)guid & 0xffff);
  return buf;
}

}  // namespace mixccl
