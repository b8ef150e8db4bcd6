// Which ranks of a job were lost, from the failure that a survivor's call reported. mixccl names
// a failed peer as "rank R (HOST pid P) failed", R in the numbering of the communicator that
// failed (a pipeline's, a gradient interval's); host and pid identify the process, so every
// survivor maps them to the same job rank. A rank that gives up a communicator during its own
// recovery is reported in the same words, so on this host a named rank counts as lost only once
// its process has ended, and every rank of this host whose process has ended is lost too.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mixccl/train/collectives.h"

namespace mixccl::train {

struct JobProcess {
  std::uint32_t host = 0;  // HostNameHash of its host name
  long pid = 0;
};

// FNV-1a of a host name as mixccl reports it (at most 63 characters).
std::uint32_t HostNameHash(const std::string& name);

// Every rank's process, through one sum over the job's ranks (each fills its own row).
std::vector<JobProcess> GatherJobProcesses(Collectives* comm, int rank, int num_ranks);

// The processes a mixccl message names as failed ("(HOST pid P) failed"), in order.
struct NamedProcess {
  std::string host;
  long pid = 0;
};
std::vector<NamedProcess> FailedProcessesInMessage(const std::string& message);

// Whether process `pid` of this host has ended (gone, or a zombie its parent has not reaped).
bool ProcessEnded(long pid);

// The job ranks lost, ascending: the ranks the message names that are on another host, and the
// ranks of this host whose process has ended, waiting up to `grace_s` for the named ones of this
// host to end (a crashed process's sockets close just before it ends). Empty when none is found.
std::vector<int> LostRanks(const std::string& message, const std::vector<JobProcess>& job,
                           int my_rank, double grace_s);

}  // namespace mixccl::train
