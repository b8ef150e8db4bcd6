// mixcclrun --bind-to: which core each local rank runs on.
//
// Why bind: a rank is at least two busy threads (the caller and its proxy thread), and on a small
// machine the scheduler may put two ranks' threads on one core while another core idles; an
// 8-byte AllReduce over TCP on 2 ranks and 2 cores then takes 17 us instead of 8.5 us, and which
// one a run gets is chance (docs/launching.md, "Binding"). mpirun binds each rank to a core for
// the same reason when the job does not oversubscribe the machine; mixcclrun does the same.
#ifndef MIXCCLRUN_BINDING_H_
#define MIXCCLRUN_BINDING_H_

#include <sched.h>

#include <string>
#include <vector>

namespace mixcclrun {

enum class BindMode { Auto, Core, None };

// "auto", "core" or "none" into *mode; false for anything else.
bool parseBindMode(const std::string& text, BindMode* mode);

// Core index of each of np ranks, given the number of cores this process may use; empty: no
// binding (mode none, or auto with more ranks than cores, where binding would only stack ranks
// on cores the scheduler could otherwise balance). Mode core with too few cores sets *error.
std::vector<int> planBinding(BindMode mode, int np, int cores, std::string* error);

// The cores this process may run on (hwloc: one set of processing units per core, hyperthreads
// of a core together). Empty with *error set when the topology cannot be read.
std::vector<cpu_set_t> allowedCores(std::string* error);

}  // namespace mixcclrun

#endif  // MIXCCLRUN_BINDING_H_
