# Native collective libraries (CCLs) next to the device runtimes:
#
#   WITH_NCCL  NVIDIA NCCL  (AUTO: on when the CUDA runtime is enabled and
#                            nccl.h + libnccl are found under NCCL_HOME, the
#                            CUDA toolkit, or /usr/local/cuda)
#   WITH_MCCL  MetaX MCCL   (AUTO: on when the MACA runtime is enabled and
#                            mccl.h + libmccl are found under MACA_PATH)
#
# AUTO|ON|OFF; ON with the library missing stops the configure. The minimum
# NCCL is 2.13 (ncclGetLastError; ncclAvg/ncclBfloat16 2.10, ncclSend/Recv
# 2.7); from 2.28 AlltoAll, Gather and Scatter are native calls, below that
# they are grouped ncclSend/ncclRecv. The results join the device lists of
# cmake/Devices.cmake, so infiniccl_configure_devices() links them:
#   INFINICCL_WITH_NCCL / INFINICCL_WITH_MCCL  ON/OFF
#
# libnccl is linked normally: it links no CUDA library itself (static cudart,
# libcuda dlopen'ed), so the library loads and runs host collectives on a
# machine without a driver; NCCL is only called once a device is present.

set(WITH_NCCL AUTO CACHE STRING "NCCL collective backend: AUTO, ON or OFF")
set_property(CACHE WITH_NCCL PROPERTY STRINGS AUTO ON OFF)
set(WITH_MCCL AUTO CACHE STRING "MetaX MCCL collective backend: AUTO, ON or OFF")
set_property(CACHE WITH_MCCL PROPERTY STRINGS AUTO ON OFF)
set(INFINICCL_NCCL_MIN_VERSION 2.13)

get_filename_component(_iccl_ccl_root "${CMAKE_CURRENT_LIST_DIR}/.." ABSOLUTE)
set(_iccl_ccl_dir "${_iccl_ccl_root}/src/backend/ccl")

# Finds <header> and lib<lib> under the given roots; on success defines
# <target> and sets <found>, <detail> and <header_path>.
function(_iccl_find_ccl found detail header_path target header lib)
  set(${found} FALSE PARENT_SCOPE)
  set(roots ${ARGN})
  set(inc_hints "")
  set(lib_hints "")
  foreach(r IN LISTS roots)
    list(APPEND inc_hints "${r}/include" "${r}/include/mccl")
    list(APPEND lib_hints "${r}/lib64" "${r}/lib")
  endforeach()
  find_path(_inc NAMES ${header} PATHS ${inc_hints} NO_DEFAULT_PATH NO_CACHE)
  find_library(_lib NAMES ${lib} lib${lib}.so.2 PATHS ${lib_hints} NO_DEFAULT_PATH NO_CACHE)
  if(NOT _inc OR NOT _lib)
    set(${detail} "no ${header} and lib${lib} under: ${roots}" PARENT_SCOPE)
    return()
  endif()
  _iccl_found_library(${found} ${detail} ${target})
  set(${header_path} "${_inc}/${header}" PARENT_SCOPE)
endfunction()

# Reads <PREFIX>_MAJOR/_MINOR/_PATCH from a header; "" when absent.
function(_iccl_header_version out header prefix)
  file(STRINGS "${header}" _lines REGEX "^#define ${prefix}_(MAJOR|MINOR|PATCH) ")
  set(v "")
  foreach(part MAJOR MINOR PATCH)
    string(REGEX MATCH "#define ${prefix}_${part} +([0-9]+)" _m "${_lines}")
    if(_m)
      list(APPEND v ${CMAKE_MATCH_1})
    endif()
  endforeach()
  list(JOIN v "." v)
  set(${out} "${v}" PARENT_SCOPE)
endfunction()

# Decides one CCL: request (AUTO|ON|OFF), whether its device runtime is on,
# and the search. Appends to the INFINICCL_DEVICE_* lists.
macro(_iccl_decide_ccl name runtime_on runtime_what source)
  string(TOUPPER "${WITH_${name}}" _iccl_ccl_req)
  set(INFINICCL_WITH_${name} OFF)
  if(_iccl_ccl_req STREQUAL "OFF" OR _iccl_ccl_req STREQUAL "FALSE" OR _iccl_ccl_req STREQUAL "0")
    message(STATUS "InfiniCCL CCL ${name}: disabled, explicit (-DWITH_${name}=OFF)")
  elseif(NOT ${runtime_on})
    if(_iccl_ccl_req STREQUAL "AUTO")
      message(STATUS "InfiniCCL CCL ${name}: disabled, the ${runtime_what} runtime is not enabled")
    else()
      message(FATAL_ERROR "WITH_${name}=ON needs the ${runtime_what} device runtime, "
                          "which is not enabled")
    endif()
  else()
    cmake_language(CALL _iccl_probe_ccl_${name} _iccl_ccl_found _iccl_ccl_detail)
    if(_iccl_ccl_found)
      set(INFINICCL_WITH_${name} ON)
      list(APPEND INFINICCL_DEVICE_SOURCES "${_iccl_ccl_dir}/${source}")
      list(APPEND INFINICCL_DEVICE_LIBRARIES InfiniCCL::${name})
      list(APPEND INFINICCL_DEVICE_DEFINITIONS INFINICCL_WITH_${name})
      message(STATUS "InfiniCCL CCL ${name}: enabled, ${_iccl_ccl_detail}")
    elseif(_iccl_ccl_req STREQUAL "AUTO")
      message(STATUS "InfiniCCL CCL ${name}: disabled, ${_iccl_ccl_detail}")
    else()
      message(FATAL_ERROR "WITH_${name}=ON but: ${_iccl_ccl_detail}")
    endif()
  endif()
endmacro()

function(_iccl_probe_ccl_NCCL found detail)
  set(roots "")
  foreach(v NCCL_HOME NCCL_ROOT)
    if(DEFINED ${v})
      list(APPEND roots "${${v}}")
    elseif(DEFINED ENV{${v}})
      list(APPEND roots "$ENV{${v}}")
    endif()
  endforeach()
  if(CUDAToolkit_LIBRARY_ROOT)
    list(APPEND roots "${CUDAToolkit_LIBRARY_ROOT}")
  endif()
  foreach(d IN LISTS CUDAToolkit_INCLUDE_DIRS)
    get_filename_component(p "${d}" DIRECTORY)
    list(APPEND roots "${p}")
  endforeach()
  list(APPEND roots /usr/local/cuda /usr)
  list(REMOVE_DUPLICATES roots)
  _iccl_find_ccl(_f _d _h InfiniCCL::NCCL nccl.h nccl ${roots})
  if(NOT _f)
    set(${found} FALSE PARENT_SCOPE)
    set(${detail} "${_d} (set NCCL_HOME)" PARENT_SCOPE)
    return()
  endif()
  _iccl_header_version(_v "${_h}" NCCL)
  if(_v STREQUAL "" OR _v VERSION_LESS INFINICCL_NCCL_MIN_VERSION)
    set(${found} FALSE PARENT_SCOPE)
    set(${detail} "NCCL '${_v}' in ${_h} is older than the minimum ${INFINICCL_NCCL_MIN_VERSION} \
(ncclGetLastError)" PARENT_SCOPE)
    return()
  endif()
  if(_v VERSION_GREATER_EQUAL 2.28)
    set(_n "AlltoAll/Gather/Scatter native")
  else()
    set(_n "AlltoAll/Gather/Scatter as grouped Send/Recv (native from 2.28)")
  endif()
  set(${found} TRUE PARENT_SCOPE)
  set(${detail} "NCCL ${_v} (minimum ${INFINICCL_NCCL_MIN_VERSION}: ncclGetLastError), ${_n}, ${_d}"
      PARENT_SCOPE)
endfunction()

function(_iccl_probe_ccl_MCCL found detail)
  _iccl_sdk_root(_maca MACA_PATH /opt/maca)
  _iccl_find_ccl(_f _d _h InfiniCCL::MCCL mccl.h mccl "${_maca}")
  set(${found} ${_f} PARENT_SCOPE)
  if(_f)
    set(${detail} "${_d} (not yet verified on MetaX hardware)" PARENT_SCOPE)
  else()
    set(${detail} "${_d}" PARENT_SCOPE)
  endif()
endfunction()

_iccl_decide_ccl(NCCL INFINICCL_WITH_NVIDIA "NVIDIA CUDA" nccl_backend.cpp)
_iccl_decide_ccl(MCCL INFINICCL_WITH_METAX "MetaX MACA" mccl_backend.cpp)
