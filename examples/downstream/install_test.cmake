# The installed-package test (ctest -R plugin_downstream_install): installs the
# attncheck component of BUILD_DIR into WORK_DIR/prefix, runs the installed plugin
# walkthrough's first commands, then configures, builds and runs the ctest of this
# sample project against that prefix only.
#   cmake -DBUILD_DIR=… -DSOURCE_DIR=… -DWORK_DIR=… -DCTEST=… [-DC_COMPILER=…]
#         [-DC_LAUNCHER=…] [-DGENERATOR=…] [-DLIBTORCH_MODULE=ON] -P install_test.cmake
function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message("== ${what}\n${out}${err}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (exit code ${rc})")
  endif()
  set(last_output "${out}${err}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE ${WORK_DIR})
run("install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK_DIR}/prefix --component attncheck)
foreach(file bin/attncheck include/attncheck/adapter.h)
  if(NOT EXISTS ${WORK_DIR}/prefix/${file})
    message(FATAL_ERROR "install did not put ${file} in the prefix")
  endif()
endforeach()

# The installed walkthrough names installed paths only, and its one-command compile
# of a copied plugin works: run its first shell block (fewer cases) in a scratch folder.
set(readme ${WORK_DIR}/prefix/share/attncheck/examples/plugin/README.md)
file(READ ${readme} walkthrough)
if(walkthrough MATCHES "build/attncheck|-Iinclude |source-only|cmake --preset")
  message(FATAL_ERROR "${readme} still names the checkout: ${CMAKE_MATCH_0}")
endif()
if(NOT walkthrough MATCHES "```sh\n(cp [^`]*)```")
  message(FATAL_ERROR "${readme}: no shell block starting with cp")
endif()
string(REPLACE "--cases 200" "--cases 5 --quiet" block "${CMAKE_MATCH_1}")
file(MAKE_DIRECTORY ${WORK_DIR}/walkthrough)
run("walkthrough block" sh -ec "${block}" WORKING_DIRECTORY ${WORK_DIR}/walkthrough)
if(NOT EXISTS ${WORK_DIR}/walkthrough/libmy_plugin.so)
  message(FATAL_ERROR "the walkthrough's compile command made no libmy_plugin.so")
endif()
# The installed program finds the installed libtorch module (lib/) where one was built.
if(LIBTORCH_MODULE)
  run("installed list" ${WORK_DIR}/prefix/bin/attncheck list)
  if(NOT last_output MATCHES "libtorch-sdpa[^\n]*\n *dtypes")
    message(FATAL_ERROR "the installed attncheck does not load its libtorch module")
  endif()
endif()

set(configure ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR}/build -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix
    -DCMAKE_BUILD_TYPE=Release)
if(GENERATOR)
  list(APPEND configure -G ${GENERATOR})
endif()
if(C_COMPILER)
  list(APPEND configure -DCMAKE_C_COMPILER=${C_COMPILER})
endif()
if(C_LAUNCHER)
  list(APPEND configure -DCMAKE_C_COMPILER_LAUNCHER=${C_LAUNCHER})
endif()
run("configure downstream" ${configure})
run("build downstream" ${CMAKE_COMMAND} --build ${WORK_DIR}/build)
run("ctest downstream" ${CTEST} --test-dir ${WORK_DIR}/build --output-on-failure -V)
# The downstream ctest must have run the gate, with the installed program, and
# replayed its corpus (attncheck_add_corpus), the case really run on the kernel.
if(NOT last_output MATCHES "attncheck_gate_my_kernel_plugin[ .]+Passed")
  message(FATAL_ERROR "the downstream ctest did not pass attncheck_gate_my_kernel_plugin")
endif()
if(NOT last_output MATCHES "attncheck_corpus_my_kernel_plugin[ .]+Passed"
   OR NOT last_output MATCHES "adapter:  isolated:plugin:[^\n]*my_kernel_plugin" OR NOT last_output MATCHES "verdict:  pass")
  message(FATAL_ERROR "the downstream ctest did not replay corpus/ on my_kernel_plugin (attncheck_corpus_my_kernel_plugin)")
endif()
file(STRINGS ${WORK_DIR}/build/CTestTestfile.cmake testfile REGEX "attncheck_gate_my_kernel_plugin")
if(NOT testfile MATCHES "${WORK_DIR}/prefix/bin/attncheck")
  message(FATAL_ERROR "the downstream gate does not run the installed attncheck")
endif()
