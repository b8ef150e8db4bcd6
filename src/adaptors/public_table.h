// The adaptor as a program sees it (mixcclCommGetAdaptor): a complete version 2 table built
// from the table mixccl calls, so every runtime entry is set (the host runtime where a
// host-memory plugin left its own out) whatever ABI version the plugin was built with.
#pragma once

#include "adaptors/adaptor_table.h"
#include "mixccl_adaptor.h"

namespace mixccl {

mixcclAdaptor_v2_t publicTableOf(const AdaptorTable& t);

}  // namespace mixccl
