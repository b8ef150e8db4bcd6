# Writes OUTPUT, a header with every MIXCCL_* variable of docs/environment.md's table and its
# default column, so that mixccl-info lists exactly what the documentation lists.
# Included by CMakeLists.txt with INPUT and OUTPUT set, at configure time (a change of INPUT
# reconfigures: CMAKE_CONFIGURE_DEPENDS).
file(STRINGS ${INPUT} rows REGEX "^\\| `MIXCCL_[A-Z0-9_]+` \\|")
set(entries "")
foreach(row ${rows})
  string(REGEX MATCH "^\\| `(MIXCCL_[A-Z0-9_]+)` \\| ([^|]*) \\|" unused "${row}")
  set(name ${CMAKE_MATCH_1})
  string(STRIP "${CMAKE_MATCH_2}" default)
  string(REPLACE "`" "" default "${default}")
  string(REPLACE "\\" "\\\\" default "${default}")
  string(REPLACE "\"" "\\\"" default "${default}")
  string(APPEND entries "    {\"${name}\", \"${default}\"},\n")
endforeach()
file(WRITE ${OUTPUT}.tmp "// Generated from docs/environment.md by tools/info/known_settings.cmake.
#pragma once

namespace mixccl_info {

struct KnownSetting {
  const char* name;
  const char* defaultValue;  // the table's default column
};

constexpr KnownSetting kKnownSettings[] = {
${entries}};

}  // namespace mixccl_info
")
# Rewritten only when it changes, so a docs edit elsewhere in the file rebuilds nothing.
configure_file(${OUTPUT}.tmp ${OUTPUT} COPYONLY)
