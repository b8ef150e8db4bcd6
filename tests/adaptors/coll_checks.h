// Collective checks run by every rank of an adaptor communicator (gloo and mpi plugin tests):
// every collective of the table over several datatypes and ops, exact results, send/recv in a
// group in both directions. Every failed check is printed.
#pragma once

#include "adaptors/adaptor_table.h"

namespace adaptor_test {

// What one rank's checks found.
struct CheckTally {
  int comparisons = 0;  // results compared element by element
  int mismatches = 0;   // comparisons that found a wrong element
  int errors = 0;       // calls that failed, and any other broken expectation
  int failures() const { return mismatches + errors; }
};

// expectWrongFirstElement: this rank expects a wrong first element in every comparison, so
// that each comparison must report a mismatch: the checker is seen to be able to fail.
CheckTally runCollectiveChecks(const mixccl::AdaptorTable* t, void* comm, int rank, int nranks,
                               bool expectWrongFirstElement = false);

// services->reduce for the tests: mixccl's own kernels.
void servicesReduce(void* dst, const void* a, const void* b, size_t count, mixcclDataType_t type,
                    mixcclRedOp_t op);

}  // namespace adaptor_test
