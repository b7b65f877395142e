# The installed-package test (ctest -R plugin_downstream_install): installs the
# attncheck component of BUILD_DIR into WORK_DIR/prefix, then configures, builds
# and runs the ctest of this sample project against that prefix only.
#   cmake -DBUILD_DIR=… -DSOURCE_DIR=… -DWORK_DIR=… -DCTEST=… [-DC_COMPILER=…]
#         [-DC_LAUNCHER=…] [-DGENERATOR=…] -P install_test.cmake
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
run("ctest downstream" ${CTEST} --test-dir ${WORK_DIR}/build --output-on-failure)
# The downstream ctest must have run the gate, with the installed program.
if(NOT last_output MATCHES "attncheck_gate_my_kernel_plugin[ .]+Passed")
  message(FATAL_ERROR "the downstream ctest did not pass attncheck_gate_my_kernel_plugin")
endif()
file(STRINGS ${WORK_DIR}/build/CTestTestfile.cmake testfile REGEX "attncheck_gate_my_kernel_plugin")
if(NOT testfile MATCHES "${WORK_DIR}/prefix/bin/attncheck")
  message(FATAL_ERROR "the downstream gate does not run the installed attncheck")
endif()
