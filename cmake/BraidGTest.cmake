# GoogleTest for the test programs: the installed one, or the sources in BRAID_GTEST_SOURCE
# (Debian's /usr/src/googletest, carried to a machine without GoogleTest such as the device
# machine: tools/gpu-check-prepare), built once. Include it wherever GTest:: targets are used.
if(NOT TARGET GTest::gtest_main)
  set(BRAID_GTEST_SOURCE "" CACHE PATH "GoogleTest sources, used when no GoogleTest is installed")
  if(BRAID_GTEST_SOURCE)
    find_package(GTest QUIET)
  else()
    find_package(GTest REQUIRED)
  endif()
  if(NOT GTest_FOUND AND NOT TARGET GTest::gtest_main)
    set(INSTALL_GTEST OFF CACHE BOOL "" FORCE)
    set(BUILD_GMOCK OFF CACHE BOOL "" FORCE)
    add_subdirectory(${BRAID_GTEST_SOURCE} ${CMAKE_BINARY_DIR}/googletest EXCLUDE_FROM_ALL)
  endif()
endif()
include(GoogleTest)
