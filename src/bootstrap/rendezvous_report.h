// What the ranks that did arrive at the rendezvous learn when others never did: which ranks are
// missing (from the root, which alone knows) and what usually causes it (added by each rank),
// instead of a bare "timed out" on every waiting rank.
#pragma once

#include <string>
#include <vector>

#include "bootstrap/rendezvous_wire.h"

namespace mixccl {

// "3", "4-5", "1, 3, 5-7" (sorted ranks, runs collapsed). Longer than maxChars: cut at a comma
// and ", ... (N in all)" appended, so the root's reply (248 bytes on the wire) always has room.
std::string rankList(const std::vector<int>& ranks, size_t maxChars = 48);

// For a table that is not complete after timeoutS seconds: "ranks 4-5 of 6 never arrived within
// 300 s (MIXCCL_TIMEOUT_S; ranks 0-3 did)". The two rank lists share room characters, two thirds
// of it for the missing ranks (rankList cuts them short beyond).
std::string missingRanksReport(const RendezvousTable& table, int timeoutS, size_t room = 72);

// The likely causes, for the ranks to add to the root's report. underMpirun names the usual one
// there: a process whose rank uses the mpi adaptor waits in MPI_Init for every process of the
// job, so a program that never calls MPI_Init itself keeps the mpi ranks from arriving.
std::string missingRanksCauses(bool underMpirun);

// Whether this process was started by Open MPI's mpirun (its environment says so).
bool startedByMpirun();

}  // namespace mixccl
