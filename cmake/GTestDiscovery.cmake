# mixccl_gtest_discover(TARGET [LABELS "a;b"] [ENVIRONMENT "X=1;Y=2"] <gtest_discover_tests args>)
#
# gtest_discover_tests with LABELS and ENVIRONMENT that keep every item. gtest_discover_tests
# writes its PROPERTIES into the generated test file one item at a time, so a list such as
# LABELS "fault;multirank" arrives as LABELS fault, and ENVIRONMENT "A=1;B=2" loses B=2
# (CMake 3.25's GoogleTestAddTests.cmake). These two are taken out wherever they appear (inside
# PROPERTIES too) and set on the discovered tests by an include file that CTest reads after the
# discovery's own, through the list of test names the discovery leaves (TEST_LIST).
include(GoogleTest)

function(mixccl_gtest_discover target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "LABELS;ENVIRONMENT" "")
  set(rest ${arg_UNPARSED_ARGUMENTS})
  # A PROPERTIES left empty (it held only these two) would be an error.
  list(LENGTH rest n)
  if(n GREATER 0)
    math(EXPR last "${n} - 1")
    list(GET rest ${last} tail)
    if(tail STREQUAL "PROPERTIES")
      list(REMOVE_AT rest ${last})
    endif()
  endif()
  get_property(count GLOBAL PROPERTY MIXCCL_GTEST_DISCOVER_COUNT)
  if(NOT count)
    set(count 0)
  endif()
  math(EXPR count "${count} + 1")
  set_property(GLOBAL PROPERTY MIXCCL_GTEST_DISCOVER_COUNT ${count})
  set(list_var "mixccl_gtests_${count}")
  gtest_discover_tests(${target} ${rest} TEST_LIST ${list_var})
  if(NOT DEFINED arg_LABELS AND NOT DEFINED arg_ENVIRONMENT)
    return()
  endif()
  set(body "if(${list_var})\n  set_tests_properties(\${${list_var}} PROPERTIES")
  if(DEFINED arg_LABELS)
    string(APPEND body " LABELS [==[${arg_LABELS}]==]")
  endif()
  if(DEFINED arg_ENVIRONMENT)
    string(APPEND body " ENVIRONMENT [==[${arg_ENVIRONMENT}]==]")
  endif()
  string(APPEND body ")\nendif()\n")
  set(file "${CMAKE_CURRENT_BINARY_DIR}/${target}_properties_${count}.cmake")
  # GENERATE: generator expressions in the values (a plugin folder) are evaluated.
  file(GENERATE OUTPUT "${file}" CONTENT "${body}")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${file}")
endfunction()
