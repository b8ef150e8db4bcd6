// Collective checks run by every rank of an adaptor communicator (gloo and mpi plugin tests):
// every collective of the table over several datatypes and ops, exact results, send/recv in a
// group in both directions. Returns the number of failed checks on this rank (each printed).
#pragma once

#include "mixccl_adaptor.h"

namespace adaptor_test {

int runCollectiveChecks(const mixcclAdaptor_v1_t* t, void* comm, int rank, int nranks);

// services->reduce for the tests: mixccl's own kernels.
void servicesReduce(void* dst, const void* a, const void* b, size_t count, mixcclDataType_t type,
                    mixcclRedOp_t op);

}  // namespace adaptor_test
