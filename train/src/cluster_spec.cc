#include "mixccl/train/cluster_spec.h"

#include "json_fields.h"
#include "mixccl/train/spec_error.h"

namespace mixccl::train {

int ClusterSpec::total_devices() const {
  int n = 0;
  for (const DeviceType& t : device_types) n += t.count;
  return n;
}

int ClusterSpec::FindType(const std::string& type_name) const {
  for (size_t i = 0; i < device_types.size(); ++i) {
    if (device_types[i].name == type_name) return static_cast<int>(i);
  }
  return -1;
}

ClusterSpec ParseClusterSpec(const std::string& json_text, const std::string& origin) {
  nlohmann::json doc = detail::ParseJson(json_text, origin);
  const std::string where = "cluster spec " + origin;
  detail::FieldReader r(doc, where);
  r.RejectUnknown({"name", "device_types", "inter_domain"});
  ClusterSpec c;
  c.name = r.String("name");
  const nlohmann::json& types = r.Array("device_types");
  if (types.empty()) throw SpecError(where + ": 'device_types' is empty");
  for (size_t i = 0; i < types.size(); ++i) {
    detail::FieldReader t(types[i], where + " device_types[" + std::to_string(i) + "]");
    t.RejectUnknown({"name", "count", "peak_tflops", "achievable_fraction", "memory_gib",
                     "reserved_gib", "domain_bandwidth_GBps", "domain_latency_us",
                     "devices_per_host", "cpu_threads"});
    DeviceType d;
    d.name = t.String("name");
    d.count = t.Int("count", 1, 1 << 24);
    d.peak_tflops = t.Number("peak_tflops", 1e-6, 1e9);
    d.achievable_fraction = t.Number("achievable_fraction", 1e-6, 1.0);
    d.memory_gib = t.Number("memory_gib", 1e-6, 1e9);
    d.reserved_gib = t.NumberOr("reserved_gib", 1.0, 0.0, 1e9);
    d.domain_bandwidth_GBps = t.Number("domain_bandwidth_GBps", 1e-6, 1e9);
    d.domain_latency_us = t.NumberOr("domain_latency_us", 5.0, 0.0, 1e9);
    d.devices_per_host = t.Int("devices_per_host", 1, 1 << 16);
    d.cpu_threads = t.IntOr("cpu_threads", 0, 1, 1024);
    if (d.reserved_gib >= d.memory_gib) {
      throw SpecError(t.where() + ": reserved_gib must be smaller than memory_gib");
    }
    if (c.FindType(d.name) >= 0) {
      throw SpecError(where + ": device type '" + d.name + "' is listed twice");
    }
    c.device_types.push_back(d);
  }
  detail::FieldReader inter(r.Object("inter_domain"), where + " inter_domain");
  inter.RejectUnknown({"bandwidth_GBps", "latency_us"});
  c.inter_bandwidth_GBps = inter.Number("bandwidth_GBps", 1e-6, 1e9);
  c.inter_latency_us = inter.Number("latency_us", 0.0, 1e9);
  return c;
}

ClusterSpec LoadClusterSpec(const std::string& path) {
  return ParseClusterSpec(detail::ReadTextFile(path), path);
}

}  // namespace mixccl::train
