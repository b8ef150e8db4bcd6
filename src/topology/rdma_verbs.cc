// RDMA discovery through libibverbs: the only file of the layer that calls the library.
//
// Devices are opened only long enough to query them; nothing is registered or allocated, so
// discovery needs no locked memory and leaves no state behind for a later fork.
#include "topology/rdma_verbs.h"

#include <endian.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace mixccl {
namespace {

// ibv_query_port is a macro over an inline function; the table needs a real function.
int queryPortReal(ibv_context* context, uint8_t port, ibv_port_attr* attr) {
  return ibv_query_port(context, port, attr);
}

std::string errnoText(const char* call, int err) {
  return std::string(call) + " failed: " + strerror(err ? err : EIO);
}

// libibverbs calls return an errno value, or -1 with errno set; either way, one number.
int callError(int rc) { return rc > 0 ? rc : errno; }

void queryPorts(const VerbsApi& api, ibv_context* ctx, int nports, RdmaDeviceFacts* f) {
  for (int port = 1; port <= nports; port++) {
    RdmaPortFacts p;
    p.port = port;
    ibv_port_attr attr;
    memset(&attr, 0, sizeof(attr));
    errno = 0;
    int rc = api.queryPort(ctx, (uint8_t)port, &attr);
    if (rc != 0) {
      p.error = errnoText("ibv_query_port", callError(rc));
      f->ports.push_back(p);
      continue;
    }
    p.state = (int)attr.state;
    p.linkLayer = attr.link_layer;
    p.activeSpeed = attr.active_speed;
    p.activeWidth = attr.active_width;
    ibv_gid gid;
    memset(&gid, 0, sizeof(gid));
    // An empty GID table (a port that is down, a RoCE port without an address yet) is no error
    // worth a line: the GID is just unknown.
    if (api.queryGid(ctx, (uint8_t)port, 0, &gid) == 0) {
      p.hasGid = true;
      memcpy(p.gid, gid.raw, sizeof(p.gid));
    }
    f->ports.push_back(p);
  }
}

void queryDevice(const VerbsApi& api, ibv_device* dev, RdmaDeviceFacts* f) {
  errno = 0;
  ibv_context* ctx = api.openDevice(dev);
  if (!ctx) {
    f->error = errnoText("ibv_open_device", errno);
    return;
  }
  ibv_device_attr attr;
  memset(&attr, 0, sizeof(attr));
  errno = 0;
  int rc = api.queryDevice(ctx, &attr);
  if (rc != 0) {
    f->error = errnoText("ibv_query_device", callError(rc));
  } else {
    f->nodeGuid = be64toh(attr.node_guid);
    queryPorts(api, ctx, attr.phys_port_cnt, f);
  }
  api.closeDevice(ctx);
}

}  // namespace

const VerbsApi& systemVerbsApi() {
  static const VerbsApi api = {ibv_get_device_list, ibv_free_device_list, ibv_get_device_name,
                               ibv_open_device,     ibv_close_device,     ibv_query_device,
                               queryPortReal,       ibv_query_gid};
  return api;
}

void scanRdmaDevices(const VerbsApi& api, const std::string& sysfsRoot, RdmaScan* out) {
  *out = RdmaScan{};
  int count = 0;
  errno = 0;
  ibv_device** list = api.getDeviceList(&count);
  if (!list) {
    // ENOSYS: the kernel has no verbs support (no RDMA driver): simply none.
    int err = errno;
    out->status = err == ENOSYS || err == 0
                      ? kRdmaNoneFound
                      : "no RDMA devices (libibverbs could not list them: " +
                            std::string(strerror(err)) + ")";
    return;
  }
  for (int i = 0; i < count && list[i]; i++) {
    RdmaDeviceFacts f;
    const char* name = api.getDeviceName(list[i]);
    f.name = name ? name : "";
    if (f.name.empty()) continue;  // nothing to show or match a device without a name by
    queryDevice(api, list[i], &f);
    readRdmaSysfs(sysfsRoot, &f);
    out->devices.push_back(f);
  }
  api.freeDeviceList(list);
  if (out->devices.empty()) out->status = kRdmaNoneFound;
}

}  // namespace mixccl
