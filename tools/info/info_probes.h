// The probes behind mixccl-info, one file each (info_versions.cc, info_adaptors.cc,
// info_transports.cc, info_settings.cc).
#pragma once

#include <string>
#include <vector>

#include "info_facts.h"

namespace mixccl_info {

std::vector<LibraryVersion> probeVersions(const PythonSide& python, int* adaptorAbi);

// The folders the adaptor loader searches, in its order (src/adaptors/adaptor_loader.h).
std::vector<std::string> pluginSearchPath();
// Every adaptor known by name or found as a plugin file, each tried with a one-rank
// communicator; defaultAdaptor says what a rank without MIXCCL_ADAPTOR gets.
std::vector<AdaptorProbe> probeAdaptors(const std::vector<std::string>& searchPath,
                                        std::string* defaultAdaptor);

// The transports, RDMA ports and GPUs (PCI) of this host.
void probeTransports(InfoFacts* facts);

// Every setting mixccl reads (docs/environment.md), with its value and where it came from; and
// MIXCCL_* variables that are set but not read by mixccl.
std::vector<SettingFact> probeSettings();

}  // namespace mixccl_info
