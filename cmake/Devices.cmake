# Devices: which vendor runtimes are compiled into the library.
#
#   WITH_NVIDIA    NVIDIA CUDA        (CUDA toolkit: find_package(CUDAToolkit))
#   WITH_ILUVATAR  Iluvatar CoreX     (COREX_PATH, default /usr/local/corex)
#   WITH_METAX     MetaX MACA         (MACA_PATH,  default /opt/maca)
#   WITH_MOORE     Moore Threads MUSA (MUSA_PATH,  default /usr/local/musa)
#   WITH_HIP       AMD GPUs and Hygon DCU, HIP runtime (ROCM_PATH, default
#                  /opt/rocm, then the system prefix: Debian's libamdhip64-dev);
#                  WITH_HYGON, InfiniTensor's spelling for Hygon, sets it
#   WITH_ASCEND    Huawei Ascend, CANN's ACL runtime (ASCEND_TOOLKIT_HOME,
#                  default /usr/local/Ascend/ascend-toolkit/latest)
#   WITH_CAMBRICON Cambricon MLU, CNRT (NEUWARE_HOME, default /usr/local/neuware)
#   AUTO_DETECT_DEVICES (ON): enable each vendor whose SDK is found
#
# An explicit -DWITH_<VENDOR>=ON or OFF always wins; only a WITH_<VENDOR> never
# given is decided by detection (and then written to the cache with the
# detected value, re-detected on every configure until it is given
# explicitly). An explicit ON whose SDK is missing stops the configure.
# COREX_PATH, MACA_PATH, MUSA_PATH, ROCM_PATH, ASCEND_TOOLKIT_HOME and
# NEUWARE_HOME may be CMake variables or environment variables.
#
# INFINICCL_VENDOR_STANDINS (OFF; tests only): where the Ascend or Cambricon
# SDK is absent, WITH_ASCEND=ON / WITH_CAMBRICON=ON build against the
# stand-in vendor libraries of tests/standin (declarations written from the
# vendors' documentation, host memory behind them) instead of stopping the
# configure. A real SDK found wins. Detection never picks a stand-in.
#
# Results, for src/CMakeLists.txt and tests:
#   INFINICCL_DEVICE_SOURCES   the factory sources of the enabled runtimes
#   INFINICCL_DEVICE_LIBRARIES their runtime libraries (imported targets)
#   INFINICCL_WITH_<VENDOR>    ON/OFF, one per vendor
#   infiniccl_configure_devices(<target> [PUBLIC|PRIVATE])
#       adds the INFINICCL_WITH_<VENDOR> definitions and links the runtime
#       libraries (whose usage requirements carry the vendor include dirs).
#
# A runtime library is linked normally, never dlopen'ed: libcudart loads on a
# machine without the NVIDIA driver (it opens libcuda itself) and then reports
# 0 devices. libmcruntime and libmusart are expected to do the same (not yet
# checked on those SDKs).

option(AUTO_DETECT_DEVICES
       "Enable each vendor runtime whose SDK is found, unless WITH_<VENDOR> is given" ON)

get_filename_component(_iccl_dev_root "${CMAKE_CURRENT_LIST_DIR}/.." ABSOLUTE)
set(_iccl_dev_dir "${_iccl_dev_root}/src/device")
option(INFINICCL_VENDOR_STANDINS
       "Tests only: build Ascend/Cambricon against tests/standin where their SDK is absent" OFF)

set(INFINICCL_DEVICE_SOURCES "")
set(INFINICCL_DEVICE_LIBRARIES "")
set(INFINICCL_DEVICE_DEFINITIONS "")

# Sets _iccl_req_<vendor> to ON or OFF (given by the user), AUTO (to detect) or
# NOAUTO (not given, detection off). A value equal to the one detection wrote
# at the previous configure counts as not given.
macro(_iccl_device_request vendor)
  set(_iccl_auto_key _INFINICCL_AUTO_WITH_${vendor})
  if(DEFINED WITH_${vendor} AND NOT (DEFINED ${_iccl_auto_key}
                                     AND "${WITH_${vendor}}" STREQUAL "${${_iccl_auto_key}}"))
    unset(${_iccl_auto_key} CACHE)
    # Typed and documented in the cache; the value given is kept.
    set(WITH_${vendor} "${WITH_${vendor}}" CACHE BOOL "Build this vendor's device runtime")
    if(WITH_${vendor})
      set(_iccl_req_${vendor} ON)
    else()
      set(_iccl_req_${vendor} OFF)
    endif()
  elseif(AUTO_DETECT_DEVICES)
    set(_iccl_req_${vendor} AUTO)
  else()
    set(_iccl_req_${vendor} NOAUTO)
  endif()
endmacro()

# A vendor SDK root: the CMake variable, else the environment variable, else
# the default.
function(_iccl_sdk_root out var default)
  if(DEFINED ${var} AND NOT "${${var}}" STREQUAL "")
    set(${out} "${${var}}" PARENT_SCOPE)
  elseif(DEFINED ENV{${var}} AND NOT "$ENV{${var}}" STREQUAL "")
    set(${out} "$ENV{${var}}" PARENT_SCOPE)
  else()
    set(${out} "${default}" PARENT_SCOPE)
  endif()
endfunction()

# NVIDIA: the CUDA toolkit through FindCUDAToolkit (nvcc on PATH, CUDA_PATH,
# CUDAToolkit_ROOT, or /usr/local/cuda). Only the runtime library and its
# headers are used; no CUDA language support is enabled.
function(_iccl_find_cuda_toolkit found detail)
  if(NOT DEFINED CUDAToolkit_ROOT AND NOT DEFINED ENV{CUDAToolkit_ROOT}
     AND NOT DEFINED ENV{CUDA_PATH} AND IS_DIRECTORY /usr/local/cuda)
    set(CUDAToolkit_ROOT /usr/local/cuda)
  endif()
  find_package(CUDAToolkit QUIET)
  if(CUDAToolkit_FOUND AND TARGET CUDA::cudart)
    set(${found} TRUE PARENT_SCOPE)
    set(${detail} "CUDA toolkit ${CUDAToolkit_VERSION}, ${CUDA_cudart_LIBRARY}"
        PARENT_SCOPE)
  else()
    set(${found} FALSE PARENT_SCOPE)
    set(${detail} "no CUDA toolkit (nvcc on PATH, CUDA_PATH, CUDAToolkit_ROOT or /usr/local/cuda)"
        PARENT_SCOPE)
  endif()
endfunction()

# A finder's success (a macro: it runs in the finder's scope): the imported
# target <target> for the library _lib with the headers of _inc (defined
# once), and <found> and <detail> set for the finder's caller.
macro(_iccl_found_library found detail target)
  if(NOT TARGET ${target})
    add_library(${target} UNKNOWN IMPORTED)
    set_target_properties(${target} PROPERTIES IMPORTED_LOCATION "${_lib}"
                          INTERFACE_INCLUDE_DIRECTORIES "${_inc}")
  endif()
  set(${found} TRUE PARENT_SCOPE)
  set(${detail} "${_lib}" PARENT_SCOPE)
endmacro()

# A CUDA-like SDK laid out as <root>/include/<header> and <root>/lib[64]/lib<lib>.so;
# on success defines the imported target <target> carrying its include dir.
function(_iccl_find_sdk found detail target root header lib)
  set(${found} FALSE PARENT_SCOPE)
  if(NOT IS_DIRECTORY "${root}")
    set(${detail} "${root} does not exist" PARENT_SCOPE)
    return()
  endif()
  find_path(_inc NAMES ${header} PATHS "${root}/include" NO_DEFAULT_PATH NO_CACHE)
  find_library(_lib NAMES ${lib} PATHS "${root}/lib64" "${root}/lib" NO_DEFAULT_PATH NO_CACHE)
  if(NOT _inc)
    set(${detail} "${root} has no include/${header}" PARENT_SCOPE)
    return()
  endif()
  if(NOT _lib)
    set(${detail} "${root} has no lib${lib} in lib64/ or lib/" PARENT_SCOPE)
    return()
  endif()
  _iccl_found_library(${found} ${detail} ${target})
endfunction()

# Decides one vendor from its request and (unless told otherwise) its SDK.
# `blocked` non-empty: detection must not enable it, for that reason.
# Appends to the INFINICCL_DEVICE_* lists and sets INFINICCL_WITH_<vendor>.
# `source` is relative to src/device.
macro(_iccl_decide_device vendor what hint source library blocked)
  set(_iccl_req ${_iccl_req_${vendor}})
  set(_iccl_on OFF)
  if(_iccl_req STREQUAL "OFF")
    set(_iccl_why "explicit (-DWITH_${vendor}=OFF)")
  elseif(_iccl_req STREQUAL "NOAUTO")
    set(_iccl_why "not requested (AUTO_DETECT_DEVICES=OFF)")
  elseif(_iccl_req STREQUAL "AUTO" AND NOT "${blocked}" STREQUAL "")
    set(_iccl_why "not auto-enabled: ${blocked}")
  else()
    cmake_language(CALL _iccl_probe_${vendor} _iccl_found _iccl_detail)
    if(_iccl_found)
      set(_iccl_on ON)
      if(_iccl_req STREQUAL "ON")
        set(_iccl_why "explicit (-DWITH_${vendor}=ON), ${_iccl_detail}")
      else()
        set(_iccl_why "detected: ${_iccl_detail}")
      endif()
    elseif(_iccl_req STREQUAL "ON")
      message(FATAL_ERROR
        "WITH_${vendor}=ON but the ${what} SDK was not found: ${_iccl_detail}.\n"
        "Install it, point ${hint} at it, or configure with -DWITH_${vendor}=OFF.")
    else()
      set(_iccl_why "not found: ${_iccl_detail}")
    endif()
  endif()
  if(_iccl_req STREQUAL "AUTO" OR _iccl_req STREQUAL "NOAUTO")
    # Visible in the cache (cmake -L, ccmake); marked as detection's own value.
    set(WITH_${vendor} ${_iccl_on} CACHE BOOL "Build the ${what} device runtime" FORCE)
    set(_INFINICCL_AUTO_WITH_${vendor} ${_iccl_on} CACHE INTERNAL "")
  endif()
  set(INFINICCL_WITH_${vendor} ${_iccl_on})
  if(_iccl_on)
    list(APPEND INFINICCL_DEVICE_SOURCES "${_iccl_dev_dir}/${source}")
    list(APPEND INFINICCL_DEVICE_LIBRARIES ${library})
    list(APPEND INFINICCL_DEVICE_DEFINITIONS INFINICCL_WITH_${vendor})
    message(STATUS "InfiniCCL device ${vendor} (${what}): enabled, ${_iccl_why}")
  else()
    message(STATUS "InfiniCCL device ${vendor} (${what}): disabled, ${_iccl_why}")
  endif()
endmacro()

_iccl_sdk_root(_iccl_corex_root COREX_PATH /usr/local/corex)
_iccl_sdk_root(_iccl_maca_root MACA_PATH /opt/maca)
_iccl_sdk_root(_iccl_musa_root MUSA_PATH /usr/local/musa)
_iccl_sdk_root(_iccl_rocm_root ROCM_PATH /opt/rocm)
_iccl_sdk_root(_iccl_ascend_root ASCEND_TOOLKIT_HOME /usr/local/Ascend/ascend-toolkit/latest)
_iccl_sdk_root(_iccl_neuware_root NEUWARE_HOME /usr/local/neuware)

# HIP: <ROCM_PATH>/include/hip/hip_runtime_api.h and libamdhip64, else the
# system prefix (Debian puts them in /usr/include and the multiarch lib dir).
# HIP's headers want the platform named: __HIP_PLATFORM_AMD__ travels with
# the imported target.
function(_iccl_find_hip found detail)
  set(${found} FALSE PARENT_SCOPE)
  find_path(_inc NAMES hip/hip_runtime_api.h HINTS "${_iccl_rocm_root}/include" NO_CACHE)
  find_library(_lib NAMES amdhip64 HINTS "${_iccl_rocm_root}/lib" "${_iccl_rocm_root}/lib64"
               NO_CACHE)
  if(NOT _inc OR NOT _lib)
    set(${detail} "no hip/hip_runtime_api.h and libamdhip64 under ${_iccl_rocm_root} or the \
system prefix (Debian: libamdhip64-dev)" PARENT_SCOPE)
    return()
  endif()
  set(_ver "")
  if(EXISTS "${_inc}/hip/hip_version.h")
    _iccl_header_version_of(_ver "${_inc}/hip/hip_version.h" HIP_VERSION)
  endif()
  _iccl_found_library(${found} ${detail} InfiniCCL::hip_runtime)
  set_property(TARGET InfiniCCL::hip_runtime PROPERTY
               INTERFACE_COMPILE_DEFINITIONS __HIP_PLATFORM_AMD__)
  set(${detail} "HIP ${_ver}, ${_lib}" PARENT_SCOPE)
endfunction()

# Reads <PREFIX>_MAJOR/_MINOR/_PATCH from a header; "" when absent.
function(_iccl_header_version_of out header prefix)
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

# Ascend and Cambricon: the SDK under its root, else (INFINICCL_VENDOR_STANDINS)
# the stand-in library target of tests/standin.
function(_iccl_find_sdk_or_standin found detail target root header lib standin)
  _iccl_find_sdk(_f _d ${target} "${root}" ${header} ${lib})
  if(_f)
    set(${found} TRUE PARENT_SCOPE)
    set(${detail} "${_d} (written from documentation, not yet verified on hardware)"
        PARENT_SCOPE)
  elseif(INFINICCL_VENDOR_STANDINS)
    _iccl_add_standins()
    if(NOT TARGET ${target})
      add_library(${target} ALIAS ${standin})
    endif()
    set(${found} TRUE PARENT_SCOPE)
    set(${detail} "STAND-IN ${standin} from tests/standin (${_d}; INFINICCL_VENDOR_STANDINS=ON)"
        PARENT_SCOPE)
  else()
    set(${found} FALSE PARENT_SCOPE)
    set(${detail} "${_d}" PARENT_SCOPE)
  endif()
endfunction()

# The stand-in vendor libraries (tests only), added once.
macro(_iccl_add_standins)
  if(NOT TARGET iccl_standin_ascendcl)
    add_subdirectory("${_iccl_dev_root}/tests/standin" "${CMAKE_BINARY_DIR}/tests/standin")
  endif()
endmacro()

# One probe per vendor (CMake command names ignore case, hence "probe"):
# macros, so the finders set <found> and <detail> in the caller's scope.
macro(_iccl_probe_ILUVATAR found detail)
  _iccl_find_sdk(${found} ${detail} InfiniCCL::corex_cudart "${_iccl_corex_root}"
                 cuda_runtime_api.h cudart)
endmacro()
macro(_iccl_probe_NVIDIA found detail)
  _iccl_find_cuda_toolkit(${found} ${detail})
endmacro()
macro(_iccl_probe_METAX found detail)
  _iccl_find_sdk(${found} ${detail} InfiniCCL::maca_runtime "${_iccl_maca_root}"
                 mcr/mc_runtime_api.h mcruntime)
endmacro()
macro(_iccl_probe_MOORE found detail)
  _iccl_find_sdk(${found} ${detail} InfiniCCL::musa_runtime "${_iccl_musa_root}"
                 musa_runtime_api.h musart)
endmacro()

macro(_iccl_probe_HIP found detail)
  _iccl_find_hip(${found} ${detail})
endmacro()
macro(_iccl_probe_ASCEND found detail)
  _iccl_find_sdk_or_standin(${found} ${detail} InfiniCCL::ascendcl "${_iccl_ascend_root}"
                            acl/acl.h ascendcl iccl_standin_ascendcl)
endmacro()
macro(_iccl_probe_CAMBRICON found detail)
  _iccl_find_sdk_or_standin(${found} ${detail} InfiniCCL::cnrt "${_iccl_neuware_root}"
                            cnrt.h cnrt iccl_standin_cnrt)
endmacro()

# WITH_HYGON: how InfiniTensor's own projects (InfiniRT, InfiniOps) spell
# Hygon DCU; here it is the HIP runtime (Hygon's DTK ships HIP and RCCL).
if(DEFINED WITH_HYGON)
  set(WITH_HIP "${WITH_HYGON}")
endif()

foreach(_v NVIDIA ILUVATAR METAX MOORE HIP ASCEND CAMBRICON)
  _iccl_device_request(${_v})
endforeach()

# CoreX's libcudart defines the same cuda* symbols as NVIDIA's: one or the
# other. Detection prefers CoreX where it is installed (a CoreX machine may
# also carry a CUDA toolkit for its compilers); an explicit choice decides.
if(_iccl_req_NVIDIA STREQUAL "ON" AND _iccl_req_ILUVATAR STREQUAL "ON")
  message(FATAL_ERROR "WITH_NVIDIA and WITH_ILUVATAR cannot both be ON: CoreX's libcudart "
                      "and NVIDIA's define the same cuda* symbols. Pick one.")
endif()
set(_iccl_block "")
if(_iccl_req_NVIDIA STREQUAL "ON")
  set(_iccl_block "WITH_NVIDIA=ON given (CoreX and CUDA share the cuda* API)")
endif()
_iccl_decide_device(ILUVATAR "Iluvatar CoreX" COREX_PATH
                    cuda_like/cuda_runtime.cpp InfiniCCL::corex_cudart "${_iccl_block}")
set(_iccl_block "")
if(INFINICCL_WITH_ILUVATAR)
  set(_iccl_block "Iluvatar CoreX is enabled and provides the cuda* API (configure with \
-DWITH_ILUVATAR=OFF -DWITH_NVIDIA=ON for NVIDIA's)")
endif()
_iccl_decide_device(NVIDIA "NVIDIA CUDA" "CUDAToolkit_ROOT (or CUDA_PATH)"
                    cuda_like/cuda_runtime.cpp CUDA::cudart "${_iccl_block}")
_iccl_decide_device(METAX "MetaX MACA" MACA_PATH
                    cuda_like/maca_runtime.cpp InfiniCCL::maca_runtime "")
_iccl_decide_device(MOORE "Moore Threads MUSA" MUSA_PATH
                    cuda_like/musa_runtime.cpp InfiniCCL::musa_runtime "")
_iccl_decide_device(HIP "HIP (AMD, Hygon DCU)" ROCM_PATH
                    cuda_like/hip_runtime.cpp InfiniCCL::hip_runtime "")
_iccl_decide_device(ASCEND "Huawei Ascend ACL" ASCEND_TOOLKIT_HOME
                    ascend/acl_runtime.cpp InfiniCCL::ascendcl "")
_iccl_decide_device(CAMBRICON "Cambricon CNRT" NEUWARE_HOME
                    cambricon/cnrt_runtime.cpp InfiniCCL::cnrt "")

# Device-side waits (gates) on Ascend and Cambricon are host functions on
# the stream: aclrtLaunchHostFunc (newer CANN; older ones have only the
# subscribe/report callbacks) and cnrtInvokeHostFunc (CNRT 5 and later).
# The stand-ins declare both; a real SDK is asked whether its header does.
# Without it, calls on that runtime's memory stay synchronous.
include(CheckCXXSymbolExists)
foreach(_pair "ASCEND;InfiniCCL::ascendcl;iccl_standin_ascendcl;aclrtLaunchHostFunc;acl/acl.h"
              "CAMBRICON;InfiniCCL::cnrt;iccl_standin_cnrt;cnrtInvokeHostFunc;cnrt.h")
  list(GET _pair 0 _v)
  list(GET _pair 1 _t)
  list(GET _pair 2 _standin)
  list(GET _pair 3 _fn)
  list(GET _pair 4 _h)
  if(NOT INFINICCL_WITH_${_v})
    continue()
  endif()
  get_target_property(_aliased ${_t} ALIASED_TARGET)
  if(_aliased STREQUAL _standin)
    set(_have TRUE)
  else()
    get_target_property(CMAKE_REQUIRED_INCLUDES ${_t} INTERFACE_INCLUDE_DIRECTORIES)
    check_cxx_symbol_exists(${_fn} ${_h} INFINICCL_HAVE_${_fn})
    set(_have ${INFINICCL_HAVE_${_fn}})
    unset(CMAKE_REQUIRED_INCLUDES)
  endif()
  if(_have)
    list(APPEND INFINICCL_DEVICE_DEFINITIONS INFINICCL_HAVE_${_fn})
    message(STATUS "InfiniCCL device ${_v}: device-side waits by ${_fn}")
  else()
    message(STATUS "InfiniCCL device ${_v}: no ${_fn} in ${_h}: calls on its memory stay "
                   "synchronous")
  endif()
endforeach()

function(infiniccl_configure_devices target)
  set(scope PUBLIC)
  if(ARGC GREATER 1)
    set(scope ${ARGV1})
  endif()
  if(INFINICCL_DEVICE_DEFINITIONS)
    target_compile_definitions(${target} ${scope} ${INFINICCL_DEVICE_DEFINITIONS})
  endif()
  if(INFINICCL_DEVICE_LIBRARIES)
    target_link_libraries(${target} ${scope} ${INFINICCL_DEVICE_LIBRARIES})
  endif()
endfunction()
