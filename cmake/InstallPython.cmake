# The Python package (python/infiniccl, pure Python) next to the library:
# `cmake --install` puts it in <prefix>/${INFINICCL_PYTHON_INSTALL_DIR} with a
# generated _install.py that tells the package where libinfiniccl is,
# relative to itself, so the pair works under any --prefix without
# LD_LIBRARY_PATH.
#
# The folder is the install prefix's purelib for INFINICCL_PYTHON (the
# system's /usr/bin/python3 first, as the tests pick it): a folder of that
# Python's own search path under the prefix when there is one (Debian's
# /usr/local/lib/python3.X/dist-packages for the default prefix /usr/local,
# so the system Python imports the package with no PYTHONPATH), else
# sysconfig's purelib with the prefix as base (lib/python3.X/site-packages).
# Without a Python: lib/python3/dist-packages.
option(INFINICCL_INSTALL_PYTHON "Install the Python package with the library" ON)
find_program(INFINICCL_PYTHON NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
find_program(INFINICCL_PYTHON NAMES python3)
set(INFINICCL_PYTHON_INSTALL_DIR "" CACHE STRING
    "Where cmake --install puts the Python package, relative to the prefix (empty: the prefix's purelib for INFINICCL_PYTHON)")
set(_py_dir "lib/python3/dist-packages")
if(INFINICCL_PYTHON_INSTALL_DIR)
  set(_py_dir "${INFINICCL_PYTHON_INSTALL_DIR}")
elseif(INFINICCL_PYTHON)
  execute_process(
    COMMAND ${INFINICCL_PYTHON} -c [=[
import os, site, sys, sysconfig
prefix = os.path.normpath(sys.argv[1])
inside = [d for d in getattr(site, "getsitepackages", lambda: [])()
          if os.path.normpath(d).startswith(prefix.rstrip("/") + "/")]
if inside:
    path = inside[0]
else:
    scheme = getattr(sysconfig, "get_default_scheme",
                     getattr(sysconfig, "_get_default_scheme", lambda: "posix_prefix"))()
    if scheme not in ("posix_prefix", "posix_user", "nt", "osx_framework_library", "venv"):
        scheme = "posix_prefix"  # Debian's posix_local adds local/ under the base
    if scheme == "posix_user":
        scheme = "posix_prefix"
    path = sysconfig.get_path("purelib", scheme, vars={"base": prefix, "platbase": prefix})
print(os.path.relpath(path, prefix))
]=] ${CMAKE_INSTALL_PREFIX}
    OUTPUT_VARIABLE _py_out RESULT_VARIABLE _py_rc OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(_py_rc EQUAL 0 AND _py_out AND NOT _py_out MATCHES "^\\.\\.")
    set(_py_dir "${_py_out}")
  endif()
endif()
set(INFINICCL_PYTHON_INSTALL_DIR "${_py_dir}")
message(STATUS "InfiniCCL: cmake --install puts the Python package in <prefix>/${_py_dir}")
if(NOT INFINICCL_INSTALL_PYTHON)
  return()
endif()

# Both are relative to the prefix unless given absolute: compute the path
# from the package folder to the library folder under a stand-in root.
foreach(v INFINICCL_PYTHON_INSTALL_DIR CMAKE_INSTALL_LIBDIR)
  if(IS_ABSOLUTE "${${v}}")
    set(_abs_${v} "${${v}}")
  else()
    set(_abs_${v} "/prefix/${${v}}")
  endif()
endforeach()
if(IS_ABSOLUTE "${INFINICCL_PYTHON_INSTALL_DIR}" OR IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(_py_to_lib "${_abs_CMAKE_INSTALL_LIBDIR}")
else()
  file(RELATIVE_PATH _py_to_lib "${_abs_INFINICCL_PYTHON_INSTALL_DIR}/infiniccl"
       "${_abs_CMAKE_INSTALL_LIBDIR}")
endif()
file(GENERATE OUTPUT ${PROJECT_BINARY_DIR}/python/_install.py CONTENT
"# Written by cmake --install: libinfiniccl relative to this package.
LIBRARY = \"${_py_to_lib}/$<TARGET_SONAME_FILE_NAME:infiniccl>\"
")
install(DIRECTORY ${PROJECT_SOURCE_DIR}/python/infiniccl
        DESTINATION ${INFINICCL_PYTHON_INSTALL_DIR}
        FILES_MATCHING PATTERN "*.py" PATTERN "__pycache__" EXCLUDE)
install(FILES ${PROJECT_BINARY_DIR}/python/_install.py
        DESTINATION ${INFINICCL_PYTHON_INSTALL_DIR}/infiniccl)
