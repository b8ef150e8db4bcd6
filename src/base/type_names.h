// Validity and names of the API's datatypes and reduction ops: the tables every layer that
// describes a call needs (argument checks, logs, the call stamps that messages carry).
#pragma once

#include "mixccl.h"

namespace mixccl {

bool isValidDataType(int type);
bool isValidRedOp(int op);

// nccl-tests names ("float", "bfloat16", "f8e4m3", ...; "sum", "avg", ...); "unknown" when
// out of range.
const char* dataTypeName(mixcclDataType_t type);
const char* redOpName(mixcclRedOp_t op);

}  // namespace mixccl
