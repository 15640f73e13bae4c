# The Python package (python/infiniccl, pure Python) next to the library:
# `cmake --install` puts it in <prefix>/${INFINICCL_PYTHON_INSTALL_DIR} with a
# generated _install.py that tells the package where libinfiniccl is,
# relative to itself, so the pair works under any --prefix without
# LD_LIBRARY_PATH. Use it with PYTHONPATH=<prefix>/lib/python3/dist-packages
# (for prefix /usr that folder is already on Debian's path).
option(INFINICCL_INSTALL_PYTHON "Install the Python package with the library" ON)
set(INFINICCL_PYTHON_INSTALL_DIR "lib/python3/dist-packages" CACHE STRING
    "Where cmake --install puts the Python package (relative to the prefix)")
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
