#include "base/type_names.h"

namespace mixccl {

bool isValidDataType(int type) { return type >= 0 && type < mixcclNumTypes; }

bool isValidRedOp(int op) { return op >= 0 && op < mixcclNumOps; }

const char* dataTypeName(mixcclDataType_t type) {
  static const char* const kNames[mixcclNumTypes] = {"int8",   "uint8",    "int32",  "uint32",
                                                     "int64",  "uint64",   "half",   "float",
                                                     "double", "bfloat16", "f8e4m3", "f8e5m2"};
  return isValidDataType(type) ? kNames[type] : "unknown";
}

const char* redOpName(mixcclRedOp_t op) {
  static const char* const kNames[mixcclNumOps] = {"sum", "prod", "max", "min", "avg"};
  return isValidRedOp(op) ? kNames[op] : "unknown";
}

}  // namespace mixccl
