# Installation: libbraid.so with its libnccl.so.2 name, the headers, a CMake package
# (find_package(Braid) -> Braid::braid) and pkg-config files (braid.pc, and nccl.pc for
# build systems that look NCCL up by that name).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS braid braid_headers EXPORT BraidTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
# GradSync (include/braid/gradsync.h) as Braid::braid_gradsync, a static library over the API.
if(TARGET braid_gradsync)
  install(TARGETS braid_gradsync EXPORT BraidTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()
# The UCX net plugin beside libnccl.so, where the loader looks (docs/networks.md).
if(TARGET nccl-net-ucx)
  install(TARGETS nccl-net-ucx LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()
install(DIRECTORY include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(CODE "
  execute_process(COMMAND \${CMAKE_COMMAND} -E create_symlink libbraid.so.${PROJECT_VERSION_MAJOR}
    \$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/libnccl.so.2)
  execute_process(COMMAND \${CMAKE_COMMAND} -E create_symlink libnccl.so.2
    \$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/libnccl.so)")
install(EXPORT BraidTargets NAMESPACE Braid:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Braid)

file(WRITE ${CMAKE_BINARY_DIR}/BraidConfig.cmake.in [=[
@PACKAGE_INIT@
include(CMakeFindDependencyMacro)
include("${CMAKE_CURRENT_LIST_DIR}/BraidTargets.cmake")
check_required_components(Braid)
]=])
configure_package_config_file(${CMAKE_BINARY_DIR}/BraidConfig.cmake.in
  ${CMAKE_BINARY_DIR}/BraidConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Braid)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/BraidConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_BINARY_DIR}/BraidConfig.cmake ${CMAKE_BINARY_DIR}/BraidConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Braid)

foreach(pcname braid nccl)
  file(WRITE ${CMAKE_BINARY_DIR}/${pcname}.pc
"prefix=\${pcfiledir}/../..
libdir=\${prefix}/${CMAKE_INSTALL_LIBDIR}
includedir=\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}

Name: ${pcname}
Description: Braid collective communication library (NCCL 2.28 compatible API)
Version: 2.28.9
Libs: -L\${libdir} -l${pcname}
Cflags: -I\${includedir}
")
  install(FILES ${CMAKE_BINARY_DIR}/${pcname}.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endforeach()
