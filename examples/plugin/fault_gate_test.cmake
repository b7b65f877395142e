# A misbehaving plugin, gated in a child process (`isolated:plugin:<library>`):
# the run finishes every case, the bad ones are classified in summary.json,
# findings.jsonl and their report folders, and the exit code is the expected one.
#   cmake -DATTNCHECK=<program> -DPLUGIN=<library> -DREPORT_DIR=<dir> -DCASES=<n>
#         -DEXPECT_EXIT=<3|1> -DOUTCOME=<error|fail> -DFAULT=<crash|timeout|none>
#         [-DCALL_TIMEOUT=<seconds>] -P fault_gate_test.cmake
file(REMOVE_RECURSE ${REPORT_DIR})
if(DEFINED CALL_TIMEOUT)
  set(ENV{ATTNCHECK_CALL_TIMEOUT} ${CALL_TIMEOUT})
endif()
execute_process(COMMAND ${ATTNCHECK} gate --adapter isolated:plugin:${PLUGIN} --law reference-agreement
                        --cases ${CASES} --seed 1 --report-dir ${REPORT_DIR} --quiet
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("exit code ${rc}\n${out}${err}")
if(NOT "${rc}" STREQUAL "${EXPECT_EXIT}")
  message(FATAL_ERROR "exit code ${rc}, expected ${EXPECT_EXIT}")
endif()

# summary.json: every case ran; some bad, some good (the run went on past the bad ones).
# A case the tolerance cannot judge is a skip (never a pass), and counts as ran.
file(READ ${REPORT_DIR}/summary.json summary)
string(JSON cases GET "${summary}" results 0 cases)
string(JSON passed GET "${summary}" results 0 passed)
string(JSON skipped GET "${summary}" results 0 skipped)
if(OUTCOME STREQUAL "error")
  string(JSON bad GET "${summary}" results 0 errors)
else()
  string(JSON bad GET "${summary}" results 0 failed)
endif()
math(EXPR total "${passed} + ${bad} + ${skipped}")
if(NOT cases EQUAL CASES OR bad EQUAL 0 OR passed EQUAL 0 OR NOT total EQUAL CASES)
  message(FATAL_ERROR "expected ${CASES} cases, some ${OUTCOME} and some passed: cases ${cases}, passed ${passed}, bad ${bad}")
endif()

# findings.jsonl: one classified line per bad case; its report folder names the class.
file(STRINGS ${REPORT_DIR}/findings.jsonl findings)
list(LENGTH findings count)
if(NOT count EQUAL bad)
  message(FATAL_ERROR "findings.jsonl has ${count} lines for ${bad} bad cases")
endif()
foreach(line IN LISTS findings)
  string(JSON outcome GET "${line}" outcome)
  string(JSON fault GET "${line}" fault)
  if(NOT outcome STREQUAL OUTCOME OR NOT fault STREQUAL FAULT)
    message(FATAL_ERROR "finding classified ${outcome}/${fault}, expected ${OUTCOME}/${FAULT}: ${line}")
  endif()
endforeach()
list(GET findings 0 first)
string(JSON report GET "${first}" report)
file(READ ${report}/meta.json meta)
string(JSON meta_outcome GET "${meta}" outcome)
if(NOT meta_outcome STREQUAL OUTCOME)
  message(FATAL_ERROR "${report}/meta.json says outcome ${meta_outcome}, expected ${OUTCOME}")
endif()
if(OUTCOME STREQUAL "error")
  file(READ ${report}/report.md markdown)
  string(FIND "${markdown}" "lassification: **${FAULT}**" at)  # "Classification" or "Rerun classification"
  if(at EQUAL -1)
    message(FATAL_ERROR "${report}/report.md does not name the classification ${FAULT}")
  endif()
endif()
