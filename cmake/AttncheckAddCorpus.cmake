# attncheck_add_corpus(): replay a folder of saved cases in ctest, so a failure
# attncheck once found in your kernel (and you fixed) stays fixed.
#
#   attncheck_add_corpus(DIR <folder>                  cases (*.json) with .meta.json sidecars, recursively
#                        TARGET <plugin library target> | ADAPTER <adapter name>...
#                                                      default: the adapters each sidecar names
#                        [NAME <test name>]            default attncheck_corpus_<target>, else _<folder name>
#                        [LAWS <law or pattern>...]    default: the law each sidecar names
#                        [TIMEOUT <seconds>]           ctest time limit
#                        [LABELS <label>...]           ctest labels (attncheck and corpus always added)
#                        [EXTRA_ARGS <arg>...])        more `attncheck replay` options
#
# The test runs  attncheck replay <folder> --adapter isolated:plugin:$<TARGET_FILE:target>
# and passes on exit code 0: every case holds (or is skipped, outside the kernel's
# capabilities). A case that fails again exits 1, an adapter crash 3. Save a case
# there with `attncheck shrink` or from a gate report folder (case.json), with a
# sidecar {"law": "...", "expect": "pass"} beside it.
include_guard(GLOBAL)

function(attncheck_add_corpus)
  cmake_parse_arguments(PARSE_ARGV 0 ARG "" "DIR;TARGET;NAME;TIMEOUT" "ADAPTER;LAWS;LABELS;EXTRA_ARGS")
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "attncheck_add_corpus: unknown arguments: ${ARG_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT TARGET attncheck::attncheck)
    message(FATAL_ERROR "attncheck_add_corpus: no attncheck::attncheck (call find_package(attncheck) first)")
  endif()
  if(NOT ARG_DIR)
    message(FATAL_ERROR "attncheck_add_corpus: DIR is required")
  endif()
  cmake_path(ABSOLUTE_PATH ARG_DIR BASE_DIRECTORY "${CMAKE_CURRENT_SOURCE_DIR}" NORMALIZE)
  if(NOT IS_DIRECTORY "${ARG_DIR}")
    message(FATAL_ERROR "attncheck_add_corpus: DIR ${ARG_DIR} is not a folder")
  endif()
  set(adapters ${ARG_ADAPTER})
  if(ARG_TARGET AND ARG_ADAPTER)
    message(FATAL_ERROR "attncheck_add_corpus: give TARGET or ADAPTER, not both")
  elseif(ARG_TARGET)
    if(NOT TARGET ${ARG_TARGET})
      message(FATAL_ERROR "attncheck_add_corpus: TARGET ${ARG_TARGET} is not a target")
    endif()
    set(adapters "isolated:plugin:$<TARGET_FILE:${ARG_TARGET}>")
  endif()
  if(NOT ARG_NAME)
    if(ARG_TARGET)
      set(ARG_NAME "attncheck_corpus_${ARG_TARGET}")
    else()
      cmake_path(GET ARG_DIR FILENAME folder)
      set(ARG_NAME "attncheck_corpus_${folder}")
    endif()
  endif()

  set(command "$<TARGET_FILE:attncheck::attncheck>" replay "${ARG_DIR}")
  foreach(adapter IN LISTS adapters)
    list(APPEND command --adapter "${adapter}")
  endforeach()
  foreach(law IN LISTS ARG_LAWS)
    list(APPEND command --law "${law}")
  endforeach()
  list(APPEND command ${ARG_EXTRA_ARGS})
  add_test(NAME ${ARG_NAME} COMMAND ${command})
  set_tests_properties(${ARG_NAME} PROPERTIES LABELS "attncheck;corpus;${ARG_LABELS}")
  if(ARG_TIMEOUT)
    set_tests_properties(${ARG_NAME} PROPERTIES TIMEOUT ${ARG_TIMEOUT})
  endif()
endfunction()
