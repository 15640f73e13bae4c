# The API reference: Doxygen over include/infiniccl/infiniccl.h and
# infiniccl_sim.h (docs/api/Doxyfile.in), into the build folder (docs/api).
# `cmake --build BUILD --target docs`; the test docs_doxygen (tests/tools)
# runs the same with warnings as errors. Needs Debian's doxygen package.
find_program(INFINICCL_DOXYGEN doxygen)
if(INFINICCL_DOXYGEN)
  set(DOXYGEN_OUT ${PROJECT_BINARY_DIR}/docs/api)
  configure_file(${PROJECT_SOURCE_DIR}/docs/api/Doxyfile.in ${PROJECT_BINARY_DIR}/docs/Doxyfile
                 @ONLY)
  add_custom_target(docs COMMAND ${INFINICCL_DOXYGEN} ${PROJECT_BINARY_DIR}/docs/Doxyfile
                    COMMENT "API reference in ${DOXYGEN_OUT}/html" VERBATIM)
else()
  message(STATUS "InfiniCCL: doxygen not found; no docs target (API reference)")
endif()
