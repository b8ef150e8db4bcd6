#include "adaptors/table_header_check.h"

#include "mixccl_adaptor.h"

namespace mixccl {

std::string checkTableHeader(int abiVersion, int expectedVersion, const char* name,
                             int memoryKind, const std::string& expectedName) {
  if (abiVersion != expectedVersion)
    return "abiVersion " + std::to_string(abiVersion) + ", this mixccl needs " +
           std::to_string(expectedVersion);
  if (name == nullptr) return "field 'name' is NULL";
  if (expectedName != name)
    return "name '" + std::string(name) + "' does not match the file name's '" + expectedName +
           "'";
  if (memoryKind != MIXCCL_ADAPTOR_HOST_MEMORY && memoryKind != MIXCCL_ADAPTOR_DEVICE_MEMORY)
    return "memoryKind " + std::to_string(memoryKind) + " is not " +
           std::to_string(MIXCCL_ADAPTOR_HOST_MEMORY) + " (host) or " +
           std::to_string(MIXCCL_ADAPTOR_DEVICE_MEMORY) + " (device)";
  return "";
}

}  // namespace mixccl
