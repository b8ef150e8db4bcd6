// Version 2 plugin tables (mixccl_adaptor.h): the check of a table and its copy into the table
// mixccl calls, with the host runtime where a host-memory table leaves its runtime out.
#pragma once

#include <cstddef>
#include <string>

#include "adaptors/adaptor_table.h"

namespace mixccl {

// The size of the first version 2 table (it ended at groupEnd); a table that says it is
// smaller is refused. Entries are only ever appended: a table between this size and this
// header's leaves the later entries NULL, a larger one is a later header's (its extra entries
// are ignored).
constexpr size_t kAdaptorTableV2MinSize = offsetof(mixcclAdaptor_v2_t, commGetAsyncError);

// "" with *out filled when table is usable as adaptor expectedName; otherwise what is wrong
// with it ("field 'lastError' is NULL"), and *out is untouched.
std::string adaptorTableFromV2(const mixcclAdaptor_v2_t* table, const std::string& expectedName,
                               AdaptorTable* out);

}  // namespace mixccl
