# Checks that a program records exactly what an NCCL application records: NEEDED libnccl.so.2
# and nothing of Braid's, so that only the loader decides which library it gets.
# Usage: cmake -DOBJDUMP=<objdump> -DPROGRAM=<binary> -P check_needed.cmake
cmake_minimum_required(VERSION 3.25)

execute_process(COMMAND "${OBJDUMP}" -p "${PROGRAM}" OUTPUT_VARIABLE headers RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${OBJDUMP} -p ${PROGRAM} failed (${rc})")
endif()
string(REGEX MATCHALL "NEEDED[ \t]+[^\n]+" needed "${headers}")
message(STATUS "${PROGRAM}: ${needed}")
if(NOT needed MATCHES "NEEDED[ \t]+libnccl\\.so\\.2")
  message(FATAL_ERROR "${PROGRAM} does not record NEEDED libnccl.so.2")
endif()
if(needed MATCHES "braid")
  message(FATAL_ERROR "${PROGRAM} names a Braid library directly; it must only know libnccl.so.2")
endif()
string(REGEX MATCHALL "(RPATH|RUNPATH)[ \t]+[^\n]+" search_paths "${headers}")
if(search_paths)
  message(FATAL_ERROR "${PROGRAM} carries ${search_paths}; LD_LIBRARY_PATH alone must choose")
endif()
