// The check of the fields every plugin table starts with, whatever its version.
#pragma once

#include <string>

namespace mixccl {

// "" when a table of version expectedVersion (the one its symbol holds) names adaptor
// expectedName and a known memory kind; otherwise what is wrong, e.g. "abiVersion 7, this
// mixccl needs 2" or "name 'other' does not match the file name's 'foo'".
std::string checkTableHeader(int abiVersion, int expectedVersion, const char* name,
                             int memoryKind, const std::string& expectedName);

}  // namespace mixccl
