#include "mixcclrun_binding.h"

#include <hwloc.h>

namespace mixcclrun {

bool parseBindMode(const std::string& text, BindMode* mode) {
  if (text == "auto") *mode = BindMode::Auto;
  else if (text == "core") *mode = BindMode::Core;
  else if (text == "none") *mode = BindMode::None;
  else return false;
  return true;
}

std::vector<int> planBinding(BindMode mode, int np, int cores, std::string* error) {
  std::vector<int> plan;
  if (mode == BindMode::None) return plan;
  if (np > cores) {
    if (mode == BindMode::Core)
      *error = "--bind-to core: " + std::to_string(np) + " ranks but " + std::to_string(cores) +
               " core(s) available to this process (use --bind-to none to oversubscribe)";
    return plan;
  }
  for (int r = 0; r < np; ++r) plan.push_back(r);
  return plan;
}

std::vector<cpu_set_t> allowedCores(std::string* error) {
  std::vector<cpu_set_t> cores;
  hwloc_topology_t topo;
  if (hwloc_topology_init(&topo) != 0) {
    *error = "hwloc_topology_init failed";
    return cores;
  }
  // Without HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED, hwloc keeps only the processing units this
  // process may use (its cpuset, a container's or a batch system's allocation).
  if (hwloc_topology_load(topo) != 0) {
    hwloc_topology_destroy(topo);
    *error = "hwloc_topology_load failed";
    return cores;
  }
  int depth = hwloc_get_type_depth(topo, HWLOC_OBJ_CORE);
  hwloc_obj_type_t type = depth < 0 ? HWLOC_OBJ_PU : HWLOC_OBJ_CORE;  // no cores known: PUs
  int n = hwloc_get_nbobjs_by_type(topo, type);
  for (int i = 0; i < n; ++i) {
    hwloc_obj_t obj = hwloc_get_obj_by_type(topo, type, i);
    if (!obj || !obj->cpuset || hwloc_bitmap_iszero(obj->cpuset)) continue;
    cpu_set_t set;
    CPU_ZERO(&set);
    int pu;
    hwloc_bitmap_foreach_begin(pu, obj->cpuset) {
      if (pu < CPU_SETSIZE) CPU_SET(pu, &set);
    }
    hwloc_bitmap_foreach_end();
    if (CPU_COUNT(&set) > 0) cores.push_back(set);
  }
  hwloc_topology_destroy(topo);
  if (cores.empty()) *error = "hwloc reports no usable core";
  return cores;
}

}  // namespace mixcclrun
