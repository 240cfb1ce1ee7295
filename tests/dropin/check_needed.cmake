# Checks that a program records exactly what an NCCL application records: NEEDED libnccl.so.2
# and nothing of Braid's, so that only the loader decides which library it gets.
# Usage: cmake -DOBJDUMP=<objdump> -DPROGRAM=<binary> -P check_needed.cmake
cmake_minimum_required(VERSION 3.25)
include(${CMAKE_CURRENT_LIST_DIR}/needed_entries.cmake)

read_needed("${PROGRAM}" needed)
if(NOT "libnccl.so.2" IN_LIST needed)
  message(FATAL_ERROR "${PROGRAM} does not record NEEDED libnccl.so.2")
endif()
if(needed MATCHES "braid")
  message(FATAL_ERROR "${PROGRAM} names a Braid library directly; it must only know libnccl.so.2")
endif()
string(REGEX MATCHALL "(RPATH|RUNPATH)[ \t]+[^\n]+" search_paths "${needed_HEADERS}")
if(search_paths)
  message(FATAL_ERROR "${PROGRAM} carries ${search_paths}; LD_LIBRARY_PATH alone must choose")
endif()
