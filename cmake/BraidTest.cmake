# braid_add_test: every test program and test registration of tests/ goes through this one
# function, so that a test's executable, its CTest names, labels and time limit are stated in
# one place, the same way everywhere.
#
#   braid_add_test(<name>
#     [SOURCES file...]     build the executable <name> from these; without SOURCES, <name> is
#                           an executable made earlier (registered once more, e.g. with another
#                           FILTER and label) or, with COMMAND, only the test's name
#     [LIBS lib...]         linked besides braid_warnings (and braid_gtest_main unless NO_GTEST)
#     [INCLUDES dir...]     private include directories
#     [DEFINES def...]      private compile definitions
#     [NO_GTEST]            a program with a main of its own
#     [OUTPUT_DIR dir]      where the executable goes (default: build/tests)
#     [NO_TESTS]            build only (registered elsewhere, or on request)
#     [COMMAND arg...]      one test, <PREFIX><name>, running this command (a target's name as
#                           the first word runs that target's file) instead of one test per
#                           discovered GoogleTest case
#     [DEPENDS target...]   programs a COMMAND runs besides its first word
#     PREFIX prefix         prefix of the CTest names ("unit." ...)
#     LABELS label...       CTest labels
#     [TIMEOUT seconds]     each test's limit
#     [FILTER filter]       only the GoogleTest cases matching this --gtest_filter
#     [ENVIRONMENT VAR=value...]  the environment of a COMMAND test
#     [WORKING_DIRECTORY dir] [DISCOVERY_TIMEOUT seconds]
#     [PROPERTIES key value ...]  further CTest properties (WILL_FAIL, SKIP_RETURN_CODE, ...))
#     [SCHEDULE alone|shared]  how the test may share the machine under `ctest -j`: `alone`
#                           (RUN_SERIAL) for tests that judge how long something took or count
#                           what the whole machine holds (fault deadlines, leftover shared
#                           memory, network namespaces cut mid-run); `shared` for the rest.
#                           Default: alone for the labels fault, killmatrix, netns and soak.
#
# Skips: a test counts as skipped only when its program exits 77 (SKIP_RETURN_CODE, set on every
# test here), which the project's programs do only after saying why: braid_gtest_main
# (tests/harness/gtest_main.cc) where every test that ran skipped with a reason, the Python
# runners where a module is missing, tools/validate-nccl --skip-status where NCCL cannot run. No
# output pattern makes a skip: GoogleTest discovery's own "[  SKIPPED ]" pattern, under which
# a program that failed after printing it would count as skipped, is taken off the discovered
# tests (see below), and PROPERTIES SKIP_REGULAR_EXPRESSION is refused.
#
# Every label also has a target, braid_tests_<label>, that builds the programs its tests run
# (the ones made here, and DEPENDS): `cmake --build build --target braid_tests_multirank`.
include_guard(GLOBAL)
include(GoogleTest)
option(BRAID_UNITY_TESTS "Compile each test program's sources in batches (unity build)" ON)

function(braid_add_test name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "NO_GTEST;NO_TESTS"
    "OUTPUT_DIR;PREFIX;TIMEOUT;FILTER;WORKING_DIRECTORY;DISCOVERY_TIMEOUT;SCHEDULE"
    "SOURCES;LIBS;INCLUDES;DEFINES;COMMAND;DEPENDS;LABELS;ENVIRONMENT;PROPERTIES")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "braid_add_test(${name}): unknown arguments ${arg_UNPARSED_ARGUMENTS}")
  endif()

  if(arg_SOURCES)
    add_executable(${name} ${arg_SOURCES})
    set(libs ${arg_LIBS} braid_warnings)
    if(NOT arg_NO_GTEST)
      list(APPEND libs braid_gtest_main)
    endif()
    target_link_libraries(${name} PRIVATE ${libs})
    if(arg_INCLUDES)
      target_include_directories(${name} PRIVATE ${arg_INCLUDES})
    endif()
    if(arg_DEFINES)
      target_compile_definitions(${name} PRIVATE ${arg_DEFINES})
    endif()
    if(NOT arg_OUTPUT_DIR)
      set(arg_OUTPUT_DIR ${CMAKE_BINARY_DIR}/tests)
    endif()
    set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${arg_OUTPUT_DIR})
    # A program of several C++ sources compiles as batches of up to eight: each source spends
    # most of its ~7 s parsing GoogleTest and the library's headers. BRAID_UNITY_TESTS=OFF
    # compiles them one by one (a compile error then names its own source's unit).
    set(cxx_only TRUE)
    foreach(source ${arg_SOURCES})
      if(NOT source MATCHES "\\.cc$")
        set(cxx_only FALSE)
      endif()
    endforeach()
    list(LENGTH arg_SOURCES nsources)
    if(BRAID_UNITY_TESTS AND cxx_only AND nsources GREATER 1)
      set_target_properties(${name} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 8)
    endif()
  endif()
  if(arg_NO_TESTS)
    return()
  endif()
  set(programs ${arg_DEPENDS})
  if(arg_COMMAND)
    list(GET arg_COMMAND 0 first)
    if(TARGET ${first})
      list(APPEND programs ${first})
    endif()
  elseif(TARGET ${name})
    list(APPEND programs ${name})
  endif()
  foreach(label ${arg_LABELS})
    if(NOT TARGET braid_tests_${label})
      add_custom_target(braid_tests_${label})
    endif()
    if(programs)
      add_dependencies(braid_tests_${label} ${programs})
    endif()
  endforeach()

  # Properties travel as name/value pairs of a flat list, where a value that is itself a list
  # (several labels) would be cut after its first item: the labels are set on their own below.
  set(properties ${arg_PROPERTIES})
  if("SKIP_REGULAR_EXPRESSION" IN_LIST properties)
    message(FATAL_ERROR "braid_add_test(${name}): a skip is exit status 77 with the reason, not "
                        "SKIP_REGULAR_EXPRESSION (it would pass a failing exit status as skipped)")
  endif()
  if(NOT "SKIP_RETURN_CODE" IN_LIST properties)
    list(APPEND properties SKIP_RETURN_CODE 77)
  endif()
  if(arg_TIMEOUT)
    list(APPEND properties TIMEOUT ${arg_TIMEOUT})
  endif()
  if(NOT arg_SCHEDULE)
    set(arg_SCHEDULE shared)
    foreach(label fault killmatrix netns soak)
      if(label IN_LIST arg_LABELS)
        set(arg_SCHEDULE alone)
      endif()
    endforeach()
  endif()
  if(arg_SCHEDULE STREQUAL "alone")
    list(APPEND properties RUN_SERIAL TRUE)
  elseif(NOT arg_SCHEDULE STREQUAL "shared")
    message(FATAL_ERROR "braid_add_test(${name}): SCHEDULE is alone or shared, not ${arg_SCHEDULE}")
  endif()

  if(arg_COMMAND)
    set(test_name ${arg_PREFIX}${name})
    set(extra)
    if(arg_WORKING_DIRECTORY)
      set(extra WORKING_DIRECTORY ${arg_WORKING_DIRECTORY})
    endif()
    add_test(NAME ${test_name} COMMAND ${arg_COMMAND} ${extra})
    set_tests_properties(${test_name} PROPERTIES LABELS "${arg_LABELS}" ${properties})
    if(arg_ENVIRONMENT)
      # Quoted: the variables are one property value, a list.
      set_tests_properties(${test_name} PROPERTIES ENVIRONMENT "${arg_ENVIRONMENT}")
    endif()
    return()
  endif()
  if(arg_ENVIRONMENT)
    message(FATAL_ERROR "braid_add_test(${name}): ENVIRONMENT is for COMMAND tests")
  endif()

  set(discover TEST_PREFIX "${arg_PREFIX}")
  if(arg_FILTER)
    list(APPEND discover TEST_FILTER "${arg_FILTER}")
  endif()
  if(arg_DISCOVERY_TIMEOUT)
    list(APPEND discover DISCOVERY_TIMEOUT ${arg_DISCOVERY_TIMEOUT})
  endif()
  # Discovered tests get their labels from a script ctest runs after the discovery's own
  # (gtest_discover_tests cannot pass a list-valued property through: CMake 3.25 writes it
  # unquoted, and a test with labels "gradsync;multirank" would carry only "gradsync").
  gtest_discover_tests(${name} ${discover} TEST_LIST ${name}_TESTS PROPERTIES ${properties})
  # Discovery marks every test SKIP_REGULAR_EXPRESSION "\\[  SKIPPED \\]", and test properties
  # only add patterns: the script CTest includes for this program (the last one discovery added)
  # is rewritten to run the discovered tests' file without it.
  get_property(include_files DIRECTORY PROPERTY TEST_INCLUDE_FILES)
  list(GET include_files -1 include_file)
  file(READ ${include_file} include_text)
  if(NOT include_text MATCHES "include\\(\"([^\"]*_tests\\.cmake)\"\\)")
    message(FATAL_ERROR "braid_add_test(${name}): no tests file in ${include_file}")
  endif()
  set(tests_file "${CMAKE_MATCH_1}")
  file(WRITE ${include_file}
       "if(EXISTS \"${tests_file}\")\n"
       "  file(READ \"${tests_file}\" tests)\n"
       "  string(REPLACE [=[ SKIP_REGULAR_EXPRESSION [==[\\[  SKIPPED \\]]==]]=] \"\" tests \"\${tests}\")\n"
       "  if(tests MATCHES \"SKIP_REGULAR_EXPRESSION\")\n"
       "    add_test(${name}_SKIP_PATTERN_LEFT ${name}_SKIP_PATTERN_LEFT)\n"
       "  endif()\n"
       "  cmake_language(EVAL CODE \"\${tests}\")\n"
       "else()\n"
       "  add_test(${name}_NOT_BUILT ${name}_NOT_BUILT)\n"
       "endif()\n")
  set(label_script ${CMAKE_CURRENT_BINARY_DIR}/${name}_labels.cmake)
  file(WRITE ${label_script} "if(DEFINED ${name}_TESTS)\n  set_tests_properties(\${${name}_TESTS} "
                             "PROPERTIES LABELS \"${arg_LABELS}\")\nendif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${label_script})
endfunction()
