// The devices available for training. A "domain" is one host: its devices share a fast
// interconnect (NVLink, xGMI, PCIe) and a host never mixes device types. Domains talk to each
// other over the inter-domain network.
#pragma once

#include <string>
#include <vector>

namespace mixccl::train {

struct DeviceType {
  std::string name;
  int count = 0;
  double peak_tflops = 0.0;            // dense 16-bit tensor TFLOP/s (10^12 FLOP/s)
  double achievable_fraction = 0.0;    // fraction of peak reached by transformer layers
  double memory_gib = 0.0;             // device memory, GiB (2^30 bytes)
  double reserved_gib = 1.0;           // runtime, communication buffers and fragmentation
  double domain_bandwidth_GBps = 0.0;  // per device, one direction, inside the domain (10^9 B/s)
  double domain_latency_us = 5.0;      // per message inside the domain
  int devices_per_host = 0;            // size of a domain
  // mixccl-train: the BLAS threads of a rank of this type (0: as the environment says). A
  // type with threads is not emulated: its speed is the machine's with that many threads, for
  // real where the machine has the cores (speed_emulation.h).
  int cpu_threads = 0;

  double achievable_flops() const { return peak_tflops * 1e12 * achievable_fraction; }
};

struct ClusterSpec {
  std::string name;
  std::vector<DeviceType> device_types;
  double inter_bandwidth_GBps = 0.0;  // per device, one direction, between domains (10^9 B/s)
  double inter_latency_us = 0.0;      // per message between domains

  int total_devices() const;
  // Index of the device type called `name`, or -1.
  int FindType(const std::string& name) const;
};

ClusterSpec ParseClusterSpec(const std::string& json_text, const std::string& origin);
ClusterSpec LoadClusterSpec(const std::string& path);

}  // namespace mixccl::train
