# Runs a command and passes only on one exit code (ctest's WILL_FAIL would also
# accept a crash or a usage error):
#   cmake -DEXPECT=<code> -DCOMMAND=<argument|argument|...> [-DONE_LINE=ON]
#         [-DMATCH=<regex the output must match>] -P AttncheckExpectExit.cmake
# ONE_LINE: stderr must be exactly one non-empty line (a refusal, not a story).
string(REPLACE "|" ";" command "${COMMAND}")
execute_process(COMMAND ${command} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("exit code ${rc}\n--- stdout ---\n${out}--- stderr ---\n${err}--------------")
if(NOT "${rc}" STREQUAL "${EXPECT}")
  message(FATAL_ERROR "exit code ${rc}, expected ${EXPECT}")
endif()
if(ONE_LINE)
  string(REGEX REPLACE "\n$" "" body "${err}")
  if(body STREQUAL "" OR body MATCHES "\n")
    message(FATAL_ERROR "stderr is not exactly one line")
  endif()
endif()
if(DEFINED MATCH AND NOT "${out}${err}" MATCHES "${MATCH}")
  message(FATAL_ERROR "output does not match '${MATCH}'")
endif()
