# Sanitizer and fuzzer builds (scripts/run-sanitizers.sh uses them; docs/reliability.md).
#   -DMIXCCL_SANITIZE=address,undefined   AddressSanitizer + UndefinedBehaviorSanitizer
#   -DMIXCCL_SANITIZE=thread              ThreadSanitizer
#   -DMIXCCL_BUILD_FUZZERS=ON|OFF|AUTO    libFuzzer targets; AUTO (default): on with clang
# Every target of the build, the library included, is instrumented.
set(MIXCCL_SANITIZE "" CACHE STRING "Sanitizers to build with: address,undefined | thread | empty")
set(MIXCCL_BUILD_FUZZERS AUTO CACHE STRING "Build libFuzzer targets: ON, OFF or AUTO (clang only)")

if(MIXCCL_SANITIZE)
  if(MIXCCL_SANITIZE MATCHES "thread" AND MIXCCL_SANITIZE MATCHES "address")
    message(FATAL_ERROR "MIXCCL_SANITIZE: thread cannot be combined with address")
  endif()
  add_compile_options(-fsanitize=${MIXCCL_SANITIZE} -fno-omit-frame-pointer -g)
  add_link_options(-fsanitize=${MIXCCL_SANITIZE})
  if(CMAKE_CXX_COMPILER_ID MATCHES "Clang" AND NOT MIXCCL_SANITIZE MATCHES "thread")
    # clang links its runtime statically into executables only; libmixccl.so (linked with
    # --no-undefined) then needs the shared runtime, found through an rpath. (Not for TSan,
    # whose shared runtime crashes at start with clang 14: under TSan only targets that link
    # the static mixccl_internal can be built.)
    execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-runtime-dir
                    OUTPUT_VARIABLE MIXCCL_SANITIZER_RUNTIME_DIR OUTPUT_STRIP_TRAILING_WHITESPACE)
    add_link_options(-shared-libsan -Wl,-rpath,${MIXCCL_SANITIZER_RUNTIME_DIR})
  endif()
  if(MIXCCL_SANITIZE MATCHES "undefined")
    # A UBSan finding fails the test instead of scrolling by. Not "enum": the C ABI receives
    # mixcclDataType_t/mixcclRedOp_t from C callers, for whom any int is a legal value of the
    # enum, and the library's job is to check it (tests pass 99 and -1 on purpose).
    add_compile_options(-fno-sanitize-recover=undefined -fno-sanitize=enum)
  endif()
endif()

if(MIXCCL_BUILD_FUZZERS STREQUAL "AUTO")
  if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    set(MIXCCL_BUILD_FUZZERS ON)
  else()
    set(MIXCCL_BUILD_FUZZERS OFF)
  endif()
endif()
if(MIXCCL_BUILD_FUZZERS)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "MIXCCL_BUILD_FUZZERS needs clang (libFuzzer): -DCMAKE_CXX_COMPILER=clang++")
  endif()
  # Coverage feedback from the library too, not only from the fuzz targets.
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()
