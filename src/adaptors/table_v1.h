// Version 1 plugin tables (mixcclAdaptor_v1_t, every entry required, collectives named by
// strings): still loaded, converted to the table mixccl calls.
#pragma once

#include <string>

#include "adaptors/adaptor_table.h"

namespace mixccl {

// "" with *out filled when table is usable as adaptor expectedName; otherwise what is wrong
// with it ("field 'allGather' is NULL"), and *out is untouched.
std::string adaptorTableFromV1(const mixcclAdaptor_v1_t* table, const std::string& expectedName,
                               AdaptorTable* out);

// What a version 1 supports() calls kind: AlltoAll, Gather and Scatter had no entries and were
// composed from send/recv, so they are "sendrecv".
const char* v1CollectiveName(CollKind kind);

}  // namespace mixccl
