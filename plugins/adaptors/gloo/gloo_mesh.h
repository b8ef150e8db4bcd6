// A Gloo context whose pairs are connected by exchanging their addresses through mixccl's
// bootstrap (services->allGather) instead of a Gloo rendezvous store.
#pragma once

#include <gloo/context.h>
#include <gloo/transport/device.h>

#include <chrono>
#include <memory>

#include "mixccl_adaptor.h"

namespace mixccl_gloo {

class MeshContext : public gloo::Context {
 public:
  MeshContext(int rank, int size) : gloo::Context(rank, size) {}
  // Collective over the adaptor communicator. Throws on failure (caught at the ABI boundary).
  void connectFullMesh(const std::shared_ptr<gloo::transport::Device>& dev,
                       const mixcclAdaptorServices_t& services);
};

// The Gloo TCP device for this process: MIXCCL_GLOO_IFNAME (an interface name, e.g. "eth0",
// "lo") if set, else MIXCCL_GLOO_HOSTNAME (a host name or address), else this host's name as
// gethostname() returns it (resolved by Gloo). See docs/adaptors.md.
std::shared_ptr<gloo::transport::Device> createTcpDevice();

}  // namespace mixccl_gloo
