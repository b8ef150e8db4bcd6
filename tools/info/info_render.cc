// mixccl-info's two outputs: text for a person, JSON (schema mixccl-info/1) for a program.
#include <nlohmann/json.hpp>

#include <string>

#include "info_facts.h"

namespace mixccl_info {
namespace {

void line(std::string* out, const std::string& text) { *out += text + "\n"; }

std::string orDash(const std::string& s) { return s.empty() ? "-" : s; }

}  // namespace

std::string renderText(const InfoFacts& f) {
  std::string out;
  line(&out, "versions");
  for (const auto& v : f.versions) {
    std::string text = "  " + v.name + ": " + (v.version.empty() ? "-" : v.version);
    if (!v.path.empty()) text += "  " + v.path;
    if (!v.note.empty()) text += "  (" + v.note + ")";
    line(&out, text);
  }
  line(&out, "  adaptor ABI: " + std::to_string(f.adaptorAbi) + " (plugins of ABI 1 load too)");
  line(&out, "adaptors (each tried with a one-rank communicator)");
  for (const auto& a : f.adaptors) {
    std::string text = "  " + a.name + ": " + (a.usable ? "usable" : "not usable") + "  " +
                       (a.file.empty() ? "no plugin file found" : a.file);
    if (!a.usable) text += "\n      why: " + a.why;
    line(&out, text);
  }
  std::string path;
  for (const auto& d : f.pluginSearchPath) path += (path.empty() ? "" : ":") + d;
  line(&out, "  plugin search path: " + orDash(path));
  line(&out, "  a rank without MIXCCL_ADAPTOR gets: " + f.defaultAdaptor);
  line(&out, "transports");
  for (const auto& t : f.transports) {
    line(&out, "  " + t.name + ": " + (t.available ? "available" : "not available") + "  " +
                   t.detail);
  }
  line(&out, "RDMA ports");
  if (f.rdmaPorts.empty()) line(&out, "  none: " + orDash(f.rdmaStatus));
  for (const auto& p : f.rdmaPorts) {
    line(&out, "  " + p.device + " port " + std::to_string(p.port) + ": " + orDash(p.state) +
                   ", " + orDash(p.linkLayer) + ", interface " + orDash(p.netDevice));
  }
  line(&out, "GPUs and accelerators (PCI)");
  if (f.gpus.empty()) line(&out, "  none found on the PCI bus");
  for (const auto& g : f.gpus) {
    line(&out, "  " + g.pciBusId + " " + g.vendor + " " + orDash(g.name) + ", NUMA node " +
                   std::to_string(g.numaNode));
  }
  line(&out, "settings (docs/environment.md)");
  for (const auto& s : f.settings) {
    line(&out, "  " + s.name + "=" + s.value + "  [" + s.source + "]");
  }
  return out;
}

std::string renderJson(const InfoFacts& f) {
  using Json = nlohmann::ordered_json;
  Json j;
  j["schema"] = "mixccl-info/1";
  j["versions"] = Json::object();
  for (const auto& v : f.versions) {
    j["versions"][v.name] = {{"version", v.version.empty() ? Json(nullptr) : Json(v.version)},
                             {"path", v.path}, {"note", v.note}};
  }
  j["adaptor_abi"] = f.adaptorAbi;
  j["plugin_search_path"] = f.pluginSearchPath;
  j["adaptors"] = Json::array();
  for (const auto& a : f.adaptors) {
    j["adaptors"].push_back(
        {{"name", a.name}, {"usable", a.usable}, {"file", a.file}, {"why", a.why}});
  }
  j["default_adaptor"] = f.defaultAdaptor;
  j["transports"] = Json::array();
  for (const auto& t : f.transports) {
    j["transports"].push_back({{"name", t.name}, {"available", t.available}, {"detail", t.detail}});
  }
  j["rdma_status"] = f.rdmaStatus;
  j["rdma_ports"] = Json::array();
  for (const auto& p : f.rdmaPorts) {
    j["rdma_ports"].push_back({{"device", p.device}, {"port", p.port}, {"state", p.state},
                               {"link_layer", p.linkLayer}, {"interface", p.netDevice}});
  }
  j["gpus"] = Json::array();
  for (const auto& g : f.gpus) {
    j["gpus"].push_back({{"pci_bus_id", g.pciBusId}, {"vendor", g.vendor}, {"name", g.name},
                         {"numa_node", g.numaNode}});
  }
  j["settings"] = Json::array();
  for (const auto& s : f.settings) {
    j["settings"].push_back({{"name", s.name}, {"value", s.value}, {"source", s.source}});
  }
  return j.dump(2) + "\n";
}

}  // namespace mixccl_info
