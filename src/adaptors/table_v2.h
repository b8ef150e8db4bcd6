// Version 2 plugin tables (mixccl_adaptor.h): the check of a table and its copy into the table
// mixccl calls, with the host runtime where a host-memory table leaves its runtime out.
#pragma once

#include <cstddef>
#include <string>

#include "adaptors/adaptor_table.h"

namespace mixccl {

// The size of the first version 2 table; a table that says it is smaller is refused (entries
// are only ever appended, so a larger one is a later header's: its extra entries are ignored).
constexpr size_t kAdaptorTableV2MinSize = sizeof(mixcclAdaptor_v2_t);

// "" with *out filled when table is usable as adaptor expectedName; otherwise what is wrong
// with it ("field 'lastError' is NULL"), and *out is untouched.
std::string adaptorTableFromV2(const mixcclAdaptor_v2_t* table, const std::string& expectedName,
                               AdaptorTable* out);

}  // namespace mixccl
