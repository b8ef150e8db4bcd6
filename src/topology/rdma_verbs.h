// The libibverbs calls of RDMA discovery, behind a table of function pointers so that tests
// can stand in for the library (no devices, a failing open, any port attributes) on a host
// without RDMA hardware. Only the topology layer and its tests include this header.
#pragma once

#include <infiniband/verbs.h>

#include <string>

#include "topology/rdma_facts.h"

namespace mixccl {

struct VerbsApi {
  ibv_device** (*getDeviceList)(int* count);
  void (*freeDeviceList)(ibv_device** list);
  const char* (*getDeviceName)(ibv_device* device);
  ibv_context* (*openDevice)(ibv_device* device);
  int (*closeDevice)(ibv_context* context);
  int (*queryDevice)(ibv_context* context, ibv_device_attr* attr);
  int (*queryPort)(ibv_context* context, uint8_t port, ibv_port_attr* attr);
  int (*queryGid)(ibv_context* context, uint8_t port, int index, ibv_gid* gid);
};

// The real library.
const VerbsApi& systemVerbsApi();

// Lists the devices through api (open, query the device, every port and its GID 0, close) and
// adds their sysfs facts from sysfsRoot ("/sys" on a real host). Never fails: no devices, no
// kernel support or no provider library is an empty list with the reason in out->status; a
// device or port that cannot be queried is kept with its error text.
void scanRdmaDevices(const VerbsApi& api, const std::string& sysfsRoot, RdmaScan* out);

}  // namespace mixccl
