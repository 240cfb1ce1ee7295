# Compares the names two nccl.h headers declare: functions, macros, enumerators and type names.
# Usage: cmake -DREFERENCE=<NVIDIA nccl.h> -DCANDIDATE=<Braid nccl.h> -P compare_api_names.cmake
# Fails when a name is missing from the candidate or the candidate adds one (the header must stay
# pure NCCL). Macros that a header #undefs again are private helpers and are ignored.

cmake_minimum_required(VERSION 3.25)
function(collect_names header out_var)
  file(READ "${header}" text)
  # Comments may mention names that are not declared; drop them first.
  string(REGEX REPLACE "/\\*([^*]|\\*+[^*/])*\\*+/" " " text "${text}")
  string(REGEX REPLACE "//[^\n]*" "" text "${text}")

  set(names "")
  string(REGEX MATCHALL "[A-Za-z_0-9]*nccl[A-Za-z0-9_]*[ \t\n]*\\(" calls "${text}")
  foreach(match IN LISTS calls)
    string(REGEX REPLACE "[ \t\n]*\\($" "" name "${match}")
    if(name MATCHES "^p?nccl[A-Za-z0-9]*$")
      list(APPEND names "function ${name}")
    endif()
  endforeach()

  string(REGEX MATCHALL "#[ \t]*define[ \t]+[A-Za-z_0-9]+" defines "${text}")
  string(REGEX MATCHALL "#[ \t]*undef[ \t]+[A-Za-z_0-9]+" undefs "${text}")
  set(undefined "")
  foreach(match IN LISTS undefs)
    string(REGEX REPLACE "^#[ \t]*undef[ \t]+" "" name "${match}")
    list(APPEND undefined "${name}")
  endforeach()
  foreach(match IN LISTS defines)
    string(REGEX REPLACE "^#[ \t]*define[ \t]+" "" name "${match}")
    if(NOT name IN_LIST undefined)
      list(APPEND names "macro ${name}")
    endif()
  endforeach()

  string(REGEX MATCHALL "nccl[A-Za-z0-9_]*[ \t\n]*=[^=]" enumerators "${text}")
  foreach(match IN LISTS enumerators)
    string(REGEX REPLACE "[ \t\n]*=.*$" "" name "${match}")
    list(APPEND names "enumerator ${name}")
  endforeach()

  string(REGEX MATCHALL "}[ \t\n]*nccl[A-Za-z0-9_]*[ \t\n]*;" typedefs "${text}")
  foreach(match IN LISTS typedefs)
    string(REGEX REPLACE "^}[ \t\n]*([A-Za-z0-9_]+)[ \t\n]*;$" "\\1" name "${match}")
    list(APPEND names "type ${name}")
  endforeach()
  string(REGEX MATCHALL "struct[ \t\n]+nccl[A-Za-z0-9_]*" tags "${text}")
  foreach(match IN LISTS tags)
    string(REGEX REPLACE "^struct[ \t\n]+" "" name "${match}")
    list(APPEND names "struct ${name}")
  endforeach()
  string(REGEX MATCHALL "\\*[ \t\n]*nccl[A-Za-z0-9_]*_t[ \t\n]*;" handles "${text}")
  foreach(match IN LISTS handles)
    string(REGEX REPLACE "^\\*[ \t\n]*([A-Za-z0-9_]+)[ \t\n]*;$" "\\1" name "${match}")
    list(APPEND names "type ${name}")
  endforeach()

  list(REMOVE_DUPLICATES names)
  list(SORT names)
  set(${out_var} "${names}" PARENT_SCOPE)
endfunction()

foreach(var REFERENCE CANDIDATE)
  if(NOT EXISTS "${${var}}")
    message(FATAL_ERROR "${var} header '${${var}}' does not exist")
  endif()
endforeach()

collect_names("${REFERENCE}" reference_names)
collect_names("${CANDIDATE}" candidate_names)

set(missing "${reference_names}")
list(REMOVE_ITEM missing ${candidate_names})
set(extra "${candidate_names}")
list(REMOVE_ITEM extra ${reference_names})

list(LENGTH reference_names reference_count)
list(FILTER reference_names INCLUDE REGEX "^function ")
list(LENGTH reference_names function_count)
message(STATUS "${REFERENCE}: ${reference_count} names, ${function_count} functions")
if(missing OR extra)
  string(REPLACE ";" "\n  " missing_text "${missing}")
  string(REPLACE ";" "\n  " extra_text "${extra}")
  message(FATAL_ERROR "API names differ from the reference header.\n"
                      "Missing from ${CANDIDATE}:\n  ${missing_text}\n"
                      "Not in the reference:\n  ${extra_text}")
endif()
message(STATUS "${CANDIDATE} declares exactly the same names")
