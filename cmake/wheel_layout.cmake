# The wheel's layout (pyproject.toml, docs/install.md): under scikit-build-core (SKBUILD) the
# install prefix is the wheel's site-packages folder and only component "python" is installed,
# so everything lands inside the package `mixccl` and finds the rest by relative run paths:
#   mixccl/_torch_backend*.so   run path $ORIGIN/lib, then torch's lib folder beside the package
#   mixccl/lib/                 libmixccl.so.0, libmixccl_launch.so.0, every adaptor plugin
#                               (the adaptor loader searches the folder of libmixccl itself)
#   mixccl/lib/nccl/            the drop-in libnccl.so.2, apart: the nccl adaptor's dlopen of
#                               libnccl.so.2 searches mixccl/lib and must find the real NCCL
#   mixccl/bin/                 the programs, run path $ORIGIN/../lib; the console commands of
#                               pyproject.toml run them (mixccl/_commands.py)
#   mixccl/_build_info.py       versions the build saw (plugins/torch/CMakeLists.txt)
# The pure-Python files come from wheel.packages. Target mixccl_wheel_contents builds exactly
# what is installed here (pyproject.toml's build.targets), none of a full build's tests.
add_custom_target(mixccl_wheel_contents)

get_property(mixccl_adaptor_plugins GLOBAL PROPERTY MIXCCL_ADAPTOR_PLUGINS)
set(mixccl_wheel_libraries mixccl mixccl_launch ${mixccl_adaptor_plugins})
foreach(target ${mixccl_wheel_libraries})
  if(TARGET ${target})
    install(TARGETS ${target} LIBRARY DESTINATION mixccl/lib COMPONENT python NAMELINK_SKIP)
    add_dependencies(mixccl_wheel_contents ${target})
  endif()
endforeach()

if(TARGET mixccl_nccl)
  set_target_properties(mixccl_nccl PROPERTIES INSTALL_RPATH "$ORIGIN/..")
  install(TARGETS mixccl_nccl LIBRARY DESTINATION mixccl/lib/nccl COMPONENT python NAMELINK_SKIP)
  add_dependencies(mixccl_wheel_contents mixccl_nccl)
endif()

set(mixccl_wheel_programs mixcclrun mixccl-topo mixccl-info mixccl-plan mixccl-train)
if(MIXCCL_BUILD_PERF)
  get_directory_property(mixccl_perf_tools DIRECTORY perf DEFINITION MIXCCL_PERF_TOOLS)
endif()
foreach(tool ${mixccl_perf_tools})
  list(APPEND mixccl_wheel_programs ${tool}_perf)
endforeach()
foreach(target ${mixccl_wheel_programs})
  if(TARGET ${target})
    set_target_properties(${target} PROPERTIES INSTALL_RPATH "$ORIGIN/../lib")
    install(TARGETS ${target} RUNTIME DESTINATION mixccl/bin COMPONENT python)
    add_dependencies(mixccl_wheel_contents ${target})
  endif()
endforeach()

set(mixccl_build_info ${PROJECT_BINARY_DIR}/python/mixccl/_build_info.py)
if(TARGET mixccl_torch_backend)
  get_property(mixccl_torch_rpath GLOBAL PROPERTY MIXCCL_TORCH_INSTALL_RPATH)
  set_target_properties(mixccl_torch_backend PROPERTIES INSTALL_RPATH "${mixccl_torch_rpath}")
  install(TARGETS mixccl_torch_backend LIBRARY DESTINATION mixccl COMPONENT python)
  add_dependencies(mixccl_wheel_contents mixccl_torch_backend)
else()
  # A wheel without the torch backend (-DMIXCCL_WITH_TORCH=OFF) says so to mixccl-info.
  file(WRITE ${mixccl_build_info} "\"\"\"What this build of mixccl was made with.\"\"\"\n\n"
    "MIXCCL_VERSION = \"${PROJECT_VERSION}\"\nTORCH_VERSION = None\n")
endif()
install(FILES ${mixccl_build_info} DESTINATION mixccl COMPONENT python)
