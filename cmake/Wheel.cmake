# The wheel that `pip install .` builds from the repository root
# (pyproject.toml, scikit-build-core, which sets SKBUILD): the package
# infiniccl holding the Python files (wheel.packages in pyproject.toml),
# libinfiniccl.so, the generated _build_info.py and, when the Python that
# builds the wheel imports torch 2.7 or later, the C++ torch backend
# infiniccl._c10d compiled against that torch. icclrun goes to the
# environment's bin/. Nothing else is installed: no headers, CMake package or
# pkg-config file (`cmake --install` gives those).
#
# The library is one file, libinfiniccl.so (no SONAME versions: a wheel
# stores no symlinks), found by the package next to itself and by the
# extension through its rpath ($ORIGIN). Its MPI is found as in any build
# (cmake/SelectMPI.cmake) and reached through the rpath of the MPI link
# folders outside the system's (INSTALL_RPATH_USE_LINK_PATH).
set_property(TARGET infiniccl PROPERTY VERSION)
set_property(TARGET infiniccl PROPERTY SOVERSION)
install(TARGETS infiniccl LIBRARY DESTINATION infiniccl)
configure_file(${PROJECT_SOURCE_DIR}/tools/icclrun/icclrun ${PROJECT_BINARY_DIR}/wheel/icclrun @ONLY)
install(PROGRAMS ${PROJECT_BINARY_DIR}/wheel/icclrun DESTINATION ${SKBUILD_SCRIPTS_DIR})

# The torch backend: the flags torch.utils.cpp_extension.CppExtension uses
# (torch's include and library folders, its C++ ABI, the extension's name),
# asked from the torch the building Python imports.
find_package(Python COMPONENTS Interpreter Development.Module REQUIRED)
set(INFINICCL_TORCH_EXTENSION "AUTO" CACHE STRING
    "Build the C++ torch backend into the wheel: AUTO (when torch 2.7+ imports), ON, OFF")
set(_torch_version "")
if(NOT INFINICCL_TORCH_EXTENSION STREQUAL "OFF")
  # The answer as CMake code: lists stay lists whatever their items hold.
  execute_process(
    COMMAND ${Python_EXECUTABLE} -W ignore -c [=[
import torch, torch.utils.cpp_extension as e
f = getattr(e, "_get_pybind11_abi_build_flags", lambda: [])
def q(items):
    return " ".join('"%s"' % i.replace("\\", "/").replace('"', '\\"') for i in items)
print('set(_torch_version "%s")' % torch.__version__)
print("set(_torch_includes %s)" % q(e.include_paths()))
print("set(_torch_libdirs %s)" % q(e.library_paths()))
print("set(_torch_abi %d)" % int(torch._C._GLIBCXX_USE_CXX11_ABI))
print("set(_torch_pybind_flags %s)" % q(f()))
]=]
    OUTPUT_FILE ${PROJECT_BINARY_DIR}/torch_flags.cmake ERROR_VARIABLE _torch_err
    RESULT_VARIABLE _torch_rc)
  if(_torch_rc EQUAL 0)
    include(${PROJECT_BINARY_DIR}/torch_flags.cmake)
    string(REGEX MATCH "^([0-9]+)\\.([0-9]+)" _mm "${_torch_version}")
    if(CMAKE_MATCH_1 LESS 2 OR (CMAKE_MATCH_1 EQUAL 2 AND CMAKE_MATCH_2 LESS 7))
      set(_why "torch ${_torch_version}: the C++ backend needs torch 2.7 or later")
      set(_torch_version "")
    endif()
  else()
    string(STRIP "${_torch_err}" _torch_err)
    string(REGEX REPLACE ".*\n" "" _why "${_torch_err}")
    set(_why "${Python_EXECUTABLE} cannot import torch (${_why})")
  endif()
  if(NOT _torch_version)
    if(INFINICCL_TORCH_EXTENSION STREQUAL "ON")
      message(FATAL_ERROR "INFINICCL_TORCH_EXTENSION=ON: ${_why}")
    endif()
    message(STATUS "InfiniCCL wheel: no C++ torch backend: ${_why}")
  endif()
endif()

if(_torch_version)
  message(STATUS "InfiniCCL wheel: C++ torch backend against torch ${_torch_version}")
  # The C++ backend's two units, which include its sources (python/setup.py's
  # UNITS; c10d_unity_1.cpp says why).
  set(_csrc ${PROJECT_SOURCE_DIR}/python/infiniccl/csrc)
  python_add_library(infiniccl_c10d MODULE WITH_SOABI
                     ${_csrc}/c10d_unity_1.cpp ${_csrc}/c10d_unity_2.cpp)
  set_target_properties(infiniccl_c10d PROPERTIES OUTPUT_NAME _c10d
                        INSTALL_RPATH "$ORIGIN")
  target_include_directories(infiniccl_c10d SYSTEM PRIVATE ${_torch_includes})
  target_compile_definitions(infiniccl_c10d PRIVATE TORCH_EXTENSION_NAME=_c10d
                             TORCH_API_INCLUDE_EXTENSION_H _GLIBCXX_USE_CXX11_ABI=${_torch_abi})
  target_compile_options(infiniccl_c10d PRIVATE ${_torch_pybind_flags})
  target_link_directories(infiniccl_c10d PRIVATE ${_torch_libdirs})
  target_link_libraries(infiniccl_c10d PRIVATE infiniccl c10 torch torch_cpu torch_python)
  install(TARGETS infiniccl_c10d LIBRARY DESTINATION infiniccl)
  set(_record "\"${_torch_version}\"")
else()
  set(_record "None")
endif()
file(WRITE ${PROJECT_BINARY_DIR}/python/_build_info.py
"# Written by the build (cmake/Wheel.cmake): the torch infiniccl._c10d was
# compiled against (None: no C++ backend) and the source it was built from.
TORCH_VERSION = ${_record}
SOURCE = \"${PROJECT_SOURCE_DIR}\"
")
install(FILES ${PROJECT_BINARY_DIR}/python/_build_info.py DESTINATION infiniccl)
