// What mixccl-info reports: everything mixccl can find out about this machine and install
// without joining a job (docs/troubleshooting.md).
#pragma once

#include <string>
#include <vector>

namespace mixccl_info {

// A library mixccl uses, as found at run time.
struct LibraryVersion {
  std::string name;     // "mixccl", "UCX", ...
  std::string version;  // "" when not found
  std::string path;     // the file loaded, "" when unknown
  std::string note;     // why it is missing, or what it is for
};

// A device adaptor, tried with a one-rank communicator (the library's own loader and checks).
struct AdaptorProbe {
  std::string name;
  std::string file;     // "built-in", or the plugin file found ("" when none was)
  bool usable = false;
  std::string why;      // the library's error message when not usable
};

struct TransportProbe {
  std::string name;     // socket, shm, ucx, ofi
  bool available = false;
  std::string detail;   // what it runs over, or why it is not available
};

struct RdmaPortFact {
  std::string device;
  int port = 0;
  std::string state;
  std::string linkLayer;
  std::string netDevice;
};

struct GpuFact {
  std::string pciBusId;
  std::string vendor;   // "NVIDIA", "AMD", "Intel" or the PCI vendor id
  std::string name;
  int numaNode = -1;
};

struct SettingFact {
  std::string name;
  std::string value;    // "(set, hidden)" for secrets
  std::string source;   // "environment"
};

struct InfoFacts {
  std::vector<LibraryVersion> versions;
  int adaptorAbi = 0;
  std::vector<std::string> pluginSearchPath;
  std::vector<AdaptorProbe> adaptors;
  std::string defaultAdaptor;  // what a rank without MIXCCL_ADAPTOR gets, and why
  std::vector<TransportProbe> transports;
  std::vector<RdmaPortFact> rdmaPorts;
  std::string rdmaStatus;
  std::vector<GpuFact> gpus;
  std::vector<SettingFact> settings;
};

// Options of the Python command (mixccl/_commands.py), which knows what the C++ side cannot.
struct PythonSide {
  std::string torchVersion;    // the installed torch, "" when not given, "none" when absent
  std::string torchBuiltFor;   // the torch the extension was compiled against
};

InfoFacts probeAll(const PythonSide& python);

std::string renderText(const InfoFacts& facts);
std::string renderJson(const InfoFacts& facts);

}  // namespace mixccl_info
