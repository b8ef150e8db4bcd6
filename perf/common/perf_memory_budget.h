// Refusing a size sweep that cannot fit, before allocating: a -e too large for the machine must
// end with a message saying what it needs, not with the kernel's OOM killer.
#ifndef MIXCCL_PERF_MEMORY_BUDGET_H_
#define MIXCCL_PERF_MEMORY_BUDGET_H_

#include <cstddef>
#include <string>

namespace mixperf {

// Bytes of host memory this process can still get: /proc/meminfo's MemAvailable, capped by the
// cgroup's limit (v2 memory.max or v1 limit_in_bytes, less what the cgroup uses). 0: unknown.
size_t availableHostMemory();

// "" when ranksOnHost ranks of perRank bytes fit in available (0: unknown, always fits), else
// the explanation, e.g. "-e 16G needs 48.0 GiB of host memory per rank (3 buffers of 16.0 GiB);
// 4 rank(s) on this host need 192.0 GiB but 11.6 GiB is available; lower -e (maxbytes)".
std::string memoryShortfall(size_t maxBytes, size_t bufferBytes, int buffers,
                            int ranksOnHost, size_t available);

}  // namespace mixperf

#endif  // MIXCCL_PERF_MEMORY_BUDGET_H_
