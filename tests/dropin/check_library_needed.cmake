# Checks that libbraid.so (what a drop-in application loads as libnccl.so.2) needs nothing a Linux
# host may lack: the C and C++ runtimes, and libcrypto.so.3 (OpenSSL 3, the bootstrap's HMAC; see
# docs/design.md, "Bootstrap"). Any other NEEDED entry would keep the drop-in from loading on a
# machine that has NVIDIA's NCCL and nothing else of ours.
# Usage: cmake -DOBJDUMP=<objdump> -DLIBRARY=<libbraid.so> -P check_library_needed.cmake
cmake_minimum_required(VERSION 3.25)
include(${CMAKE_CURRENT_LIST_DIR}/needed_entries.cmake)

read_needed("${LIBRARY}" needed)
if(NOT "libcrypto.so.3" IN_LIST needed)
  message(FATAL_ERROR "${LIBRARY} does not record NEEDED libcrypto.so.3")
endif()
set(allowed "^(libc|libm|libpthread|librt|libdl)\\.so\\.[0-9]+$" "^ld-linux[-a-z0-9_]*\\.so\\.[0-9]+$"
            "^libstdc\\+\\+\\.so\\.6$" "^libgcc_s\\.so\\.1$" "^libcrypto\\.so\\.3$")
foreach(name IN LISTS needed)
  set(known FALSE)
  foreach(pattern IN LISTS allowed)
    if(name MATCHES "${pattern}")
      set(known TRUE)
    endif()
  endforeach()
  if(NOT known)
    message(FATAL_ERROR "${LIBRARY} needs ${name}: only the C/C++ runtimes and libcrypto.so.3 "
                        "may be needed")
  endif()
endforeach()
