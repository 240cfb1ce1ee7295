# CTest driver of validate_nccl (cmake -P): two worker runs, then the comparer.
#   -DWORKER=... -DLIBRARY=... -DNP=N -DDIR=... -DMODE=same|reference|perturb
# same:      Braid twice; the second run only changes the poison byte, so an element neither run
#            wrote also differs. The comparer must report 0 mismatches and 0 rejected calls.
# reference: the closed forms of 1 rank (what NVIDIA's NCCL must output too) against Braid;
#            the same expectations.
# perturb:   the second run alters element 0 of every record (--perturb); the comparer must exit
#            1 with every record flagged (counts without 0, so every record has an element).
foreach(var WORKER LIBRARY NP DIR MODE)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "run_check.cmake: -D${var}= is required")
  endif()
endforeach()
file(MAKE_DIRECTORY ${DIR})

set(braid --library ${LIBRARY} --memory host --np ${NP})
if(MODE STREQUAL "perturb")
  set(counts 1,31,1021)
  set(first ${braid})
  set(second ${braid} --perturb)
elseif(MODE STREQUAL "reference")
  set(counts 0,1,7,31,1021,4099,65537)
  set(first --reference)
  set(second ${braid})
else()
  set(counts 0,1,7,31,1021,4099)
  set(first ${braid})
  set(second ${braid} --poison 0x5a)
endif()

function(run_worker out)
  execute_process(COMMAND ${WORKER} ${ARGN} --counts ${counts} --out ${out}
                  RESULT_VARIABLE status OUTPUT_VARIABLE output ERROR_VARIABLE errors)
  message("${output}${errors}")
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "worker exited with ${status}")
  endif()
endfunction()

run_worker(${DIR}/a.bin ${first})
run_worker(${DIR}/b.bin ${second})
execute_process(COMMAND ${WORKER} --compare ${DIR}/a.bin ${DIR}/b.bin --show 2
                RESULT_VARIABLE status OUTPUT_VARIABLE output ERROR_VARIABLE errors)
string(REGEX MATCH "# ([0-9]+) records, [0-9]+ elements compared: ([0-9]+) records differ \\([0-9]+ elements\\), ([0-9]+) rejected"
       summary "${output}")
set(records ${CMAKE_MATCH_1})
set(differ ${CMAKE_MATCH_2})
set(rejected ${CMAKE_MATCH_3})
# The files are large (up to ~200 MB at 65537); only a failure needs them.
if(summary AND ((MODE STREQUAL "perturb" AND status EQUAL 1) OR status EQUAL 0))
  file(REMOVE ${DIR}/a.bin ${DIR}/b.bin)
endif()

if(MODE STREQUAL "perturb")
  string(REGEX MATCH "[^\n]*mismatched/of.*" table "${output}")
  message("${table}")
  if(NOT status EQUAL 1 OR NOT summary OR records EQUAL 0 OR NOT differ EQUAL records)
    message(FATAL_ERROR "altered results: comparer status ${status}, ${differ} of ${records} "
                        "records flagged (expected status 1 and all of them)")
  endif()
else()
  # The mismatch lines are the useful part of a failure; the table is printed in any case.
  message("${output}${errors}")
  if(NOT status EQUAL 0 OR NOT summary OR records EQUAL 0 OR NOT differ EQUAL 0
     OR NOT rejected EQUAL 0)
    message(FATAL_ERROR "${MODE}: comparer status ${status}, ${differ} records differ, "
                        "${rejected} rejected by both (expected 0, 0, 0)")
  endif()
endif()
message("run_check: ${MODE} at ${NP} ranks passed (${records} records)")
