# Fails when an ISA-specific kernel object defines a weak (COMDAT) symbol. Such a symbol (an
# inline function or template instantiated in the AVX-512 unit, say) could be chosen by the
# linker for every caller in libbraid, running AVX-512 code on CPUs without it.
# Usage: cmake -DNM=<nm> -DOBJECTS=<a.o;b.o;...> -P check_isa_symbols.cmake
set(failed "")
foreach(object IN LISTS OBJECTS)
  if(NOT object MATCHES "reduce_(scalar|avx2|avx512|avx512_bf16)")
    continue()
  endif()
  execute_process(COMMAND "${NM}" --defined-only -C "${object}"
                  OUTPUT_VARIABLE symbols RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${NM} failed on ${object}")
  endif()
  string(REPLACE "\n" ";" lines "${symbols}")
  foreach(line IN LISTS lines)
    if(line MATCHES "^[0-9a-fA-F]+ [WVu] ")
      string(APPEND failed "\n  ${object}: ${line}")
    endif()
  endforeach()
endforeach()
if(failed)
  message(FATAL_ERROR "weak symbols in ISA-specific kernel objects:${failed}")
endif()
message(STATUS "no weak symbols in the ISA-specific kernel objects")
