# attncheck_add_gate(): add an `attncheck gate` run of your kernel to ctest.
#
#   attncheck_add_gate(TARGET <plugin library target> | ADAPTER <adapter name>
#                      [NAME <test name>]          default attncheck_gate_<target>
#                      [LAWS <law or pattern>...]  default every law
#                      [CASES <n>]                 default 200
#                      [SEED <s>]                  default 1
#                      [REPORT_DIR <dir>]          default <build dir>/attncheck-report/<test name>
#                      [TIMEOUT <seconds>]         ctest time limit
#                      [LABELS <label>...]         ctest labels (attncheck is always added)
#                      [EXPECT_FAIL]               pass only when a law fails (exit code 1)
#                      [IN_PROCESS]                load TARGET into the harness itself (faster;
#                                                  a crash then takes the run down)
#                      [EXTRA_ARGS <arg>...])      more `attncheck gate` options
#
# TARGET names a shared library (add_library(... MODULE|SHARED)) implementing the C
# plugin ABI (attncheck/adapter.h, link attncheck::plugin_abi); the test runs
#   attncheck gate --adapter isolated:plugin:$<TARGET_FILE:target> --cases N --seed S ...
# (isolated: runs the plugin in a child process with a per-call time limit, so a
# crash or a hang becomes a classified error, exit code 3, instead of killing ctest).
# ADAPTER instead names any adapter the program knows ("exec:python3 my.py", "eigen").
# The test passes on exit code 0 (every law held); with EXPECT_FAIL only on exit
# code 1 (a law failed), never on 2 (bad input) or 3 (the adapter crashed).
# Failure reports land in REPORT_DIR, one folder per failing case.
include_guard(GLOBAL)
set(_ATTNCHECK_ADD_GATE_DIR "${CMAKE_CURRENT_LIST_DIR}")

function(attncheck_add_gate)
  cmake_parse_arguments(PARSE_ARGV 0 ARG "EXPECT_FAIL;IN_PROCESS"
    "TARGET;ADAPTER;NAME;CASES;SEED;REPORT_DIR;TIMEOUT" "LAWS;LABELS;EXTRA_ARGS")
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "attncheck_add_gate: unknown arguments: ${ARG_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT TARGET attncheck::attncheck)
    message(FATAL_ERROR "attncheck_add_gate: no attncheck::attncheck (call find_package(attncheck) first)")
  endif()
  if(ARG_TARGET AND ARG_ADAPTER)
    message(FATAL_ERROR "attncheck_add_gate: give TARGET or ADAPTER, not both")
  elseif(ARG_TARGET)
    if(NOT TARGET ${ARG_TARGET})
      message(FATAL_ERROR "attncheck_add_gate: TARGET ${ARG_TARGET} is not a target")
    endif()
    if(ARG_IN_PROCESS)
      set(adapter "plugin:$<TARGET_FILE:${ARG_TARGET}>")
      list(APPEND ARG_EXTRA_ARGS --in-process)  # the gate isolates plugin: unless told not to
    else()
      set(adapter "isolated:plugin:$<TARGET_FILE:${ARG_TARGET}>")
    endif()
    if(NOT ARG_NAME)
      set(ARG_NAME "attncheck_gate_${ARG_TARGET}")
    endif()
  elseif(ARG_ADAPTER)
    set(adapter "${ARG_ADAPTER}")
    if(NOT ARG_NAME)
      message(FATAL_ERROR "attncheck_add_gate: ADAPTER needs a NAME for the test")
    endif()
  else()
    message(FATAL_ERROR "attncheck_add_gate: TARGET or ADAPTER is required")
  endif()
  if(NOT DEFINED ARG_CASES)
    set(ARG_CASES 200)
  endif()
  if(NOT DEFINED ARG_SEED)
    set(ARG_SEED 1)
  endif()
  if(NOT ARG_REPORT_DIR)
    set(ARG_REPORT_DIR "${CMAKE_CURRENT_BINARY_DIR}/attncheck-report/${ARG_NAME}")
  endif()

  set(command "$<TARGET_FILE:attncheck::attncheck>" gate --adapter "${adapter}"
      --cases ${ARG_CASES} --seed ${ARG_SEED} --report-dir "${ARG_REPORT_DIR}" --quiet)
  foreach(law IN LISTS ARG_LAWS)
    list(APPEND command --law "${law}")
  endforeach()
  list(APPEND command ${ARG_EXTRA_ARGS})

  if(ARG_EXPECT_FAIL)
    list(JOIN command "|" joined)
    add_test(NAME ${ARG_NAME}
      COMMAND "${CMAKE_COMMAND}" -DEXPECT=1 "-DCOMMAND=${joined}"
              -P "${_ATTNCHECK_ADD_GATE_DIR}/AttncheckExpectExit.cmake")
  else()
    add_test(NAME ${ARG_NAME} COMMAND ${command})
  endif()
  set(labels attncheck ${ARG_LABELS})
  set_tests_properties(${ARG_NAME} PROPERTIES LABELS "${labels}")
  if(ARG_TIMEOUT)
    set_tests_properties(${ARG_NAME} PROPERTIES TIMEOUT ${ARG_TIMEOUT})
  endif()
endfunction()
