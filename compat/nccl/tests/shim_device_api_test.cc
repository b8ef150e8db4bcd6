// The NCCL shim's answers to the calls of NCCL's device API and of NCCL 2.30's additions, which
// C cannot call (nccl_device.h is C++): refusals with their exact messages, and the host-side
// team queries. Declarations: the real nccl.h and nccl_device.h, plus the shim's own of NCCL
// 2.30's additions (src/nccl_230_api.h).
#include <nccl.h>
#include <nccl_device.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "nccl_230_api.h"

namespace {

int failures = 0;

void expectRefusal(const char* what, ncclResult_t got, ncclComm_t comm, const std::string& message) {
  const char* msg = ncclGetLastError(comm);
  if (got != ncclInvalidUsage || message != msg) {
    std::fprintf(stderr, "%s: returned %d, message \"%s\"\n  want ncclInvalidUsage, \"%s\"\n", what,
                 got, msg, message.c_str());
    ++failures;
  }
}

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "check failed: %s\n", what);
    ++failures;
  }
}

std::string refusal(const char* fn, const char* what) {
  return std::string(fn) + ": not supported by mixccl's NCCL shim: " + what + " (docs/nccl-compat.md)";
}

}  // namespace

int main() {
  const char* device = "the device API (device communicators, GIN, LSA, multimem)";
  const char* params = "NCCL's parameter registry (mixccl reads MIXCCL_* variables, docs/environment.md)";
  ncclComm_t comms[2];
  if (ncclCommInitAll(comms, 2, nullptr) != ncclSuccess) {
    std::fprintf(stderr, "ncclCommInitAll: %s\n", ncclGetLastError(nullptr));
    return 1;
  }
  ncclComm_t comm = comms[1];
  ncclDevComm_t dev;
  expectRefusal("ncclDevCommCreate", ncclDevCommCreate(comm, nullptr, &dev), comm,
                refusal("ncclDevCommCreate", device));
  void* ptr = nullptr;
  expectRefusal("ncclGetPeerDevicePointer", ncclGetPeerDevicePointer(nullptr, 0, 0, &ptr), nullptr,
                refusal("ncclGetPeerDevicePointer", device));
  check(ncclLLA2ACalcSlots(64, 8) == 0, "ncclLLA2ACalcSlots gives no slots");
  check(refusal("ncclLLA2ACalcSlots", device) == ncclGetLastError(nullptr),
        "ncclLLA2ACalcSlots records its refusal");
  ncclComm_t grown = nullptr;
  ncclParamHandle_t h;
  expectRefusal("ncclParamBind", ncclParamBind(&h, "NCCL_PROTO"), nullptr, refusal("ncclParamBind", params));
  ncclWaitSignalDesc_t desc{1, 0, 0, 0};
  expectRefusal("ncclWaitSignal", ncclWaitSignal(1, &desc, comm, nullptr), comm,
                refusal("ncclWaitSignal", "one-sided signals on windows"));
  // The profiling twins are the same functions (shrink is mixccl's: its argument check).
  check(pncclCommShrink(comm, nullptr, 0, &grown, nullptr, 7) == ncclInvalidArgument &&
            std::string(ncclGetLastError(comm)) ==
                "mixcclCommShrink: flags 0x7 is neither MIXCCL_SHRINK_DEFAULT nor MIXCCL_SHRINK_ABORT",
        "pncclCommShrink is ncclCommShrink");
  // Teams of rank 1 of 2: the world, a one-rank LSA team, the rail team spanning the world.
  ncclTeam_t world = ncclTeamWorld(comm), lsa = ncclTeamLsa(comm), rail = ncclTeamRail(comm);
  check(world.nRanks == 2 && world.rank == 1 && world.stride == 1, "world team");
  check(lsa.nRanks == 1 && lsa.rank == 0 && lsa.stride == 1, "LSA team");
  check(rail.nRanks == 2 && rail.rank == 1, "rail team");
  check(ncclTeamRankToWorld(comm, world, 0) == 0 && ncclTeamRankToWorld(comm, rail, 1) == 1,
        "team ranks to world ranks");
  check(ncclTeamRankToLsa(comm, lsa, 0) == 0, "LSA rank");
  // A destroyed communicator: an empty team and mixccl's message.
  ncclCommDestroy(comms[0]);
  ncclCommDestroy(comms[1]);
  ncclTeam_t none = ncclTeamWorld(comm);
  check(none.nRanks == 0, "no team for a destroyed communicator");
  char expected[200];
  std::snprintf(expected, sizeof expected,
                "ncclTeamWorld: mixcclCommUserRank: %p is not a live communicator (destroyed or "
                "aborted?)", static_cast<void*>(comm));
  check(std::strcmp(ncclGetLastError(nullptr), expected) == 0, "team query of a destroyed comm");
  std::printf("device API: %s\n", failures ? "FAILED" : "PASSED");
  return failures != 0;
}
