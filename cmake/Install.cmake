# Installs headers, the shared library, a CMake package
# (find_package(InfiniCCL) -> InfiniCCL::infiniccl) and a pkg-config file.
include(CMakePackageConfigHelpers)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/infiniccl
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS infiniccl EXPORT InfiniCCLTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT InfiniCCLTargets NAMESPACE InfiniCCL::
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/InfiniCCL)

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/InfiniCCLConfig.cmake.in
  ${PROJECT_BINARY_DIR}/InfiniCCLConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/InfiniCCL)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/InfiniCCLConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/InfiniCCLConfig.cmake
              ${PROJECT_BINARY_DIR}/InfiniCCLConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/InfiniCCL)

# pkg-config: the public header needs nothing from MPI, so consumers only
# need -linfiniccl; the MPI libraries come in through the DT_NEEDED entries.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(INFINICCL_PC_LIBDIR "${CMAKE_INSTALL_LIBDIR}")
else()
  set(INFINICCL_PC_LIBDIR "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
endif()
if(IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(INFINICCL_PC_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}")
else()
  set(INFINICCL_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
endif()
# From <libdir>/pkgconfig back up to the prefix.
file(RELATIVE_PATH INFINICCL_PC_UP
     "${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "${CMAKE_INSTALL_PREFIX}")
string(REGEX REPLACE "/$" "" INFINICCL_PC_UP "${INFINICCL_PC_UP}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/infiniccl.pc.in
               ${PROJECT_BINARY_DIR}/infiniccl.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/infiniccl.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# The Python package (python/).
include(${PROJECT_SOURCE_DIR}/cmake/InstallPython.cmake)
