# The installed CMake package (component `attncheck`): the program, its libtorch
# module (where built), the C plugin ABI header, attncheckConfig.cmake with
# attncheck_add_gate() and attncheck_add_corpus(), the plugin walkthrough (its
# paths naming the install) with the example plugin's source, and
# examples/downstream. In this build tree the same names exist (attncheck::attncheck,
# attncheck::plugin_abi, attncheck_add_gate) so examples/plugin gates itself the
# way a downstream project does.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

add_executable(attncheck::attncheck ALIAS attncheck)
add_library(attncheck_plugin_abi INTERFACE)
target_include_directories(attncheck_plugin_abi INTERFACE $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>)
add_library(attncheck::plugin_abi ALIAS attncheck_plugin_abi)
include(${CMAKE_CURRENT_LIST_DIR}/AttncheckAddGate.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/AttncheckAddCorpus.cmake)

set(ATTNCHECK_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/attncheck)
install(TARGETS attncheck RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT attncheck)
if(ATTNCHECK_HAVE_LIBTORCH)  # the libtorch module, found by the program in its lib dir
  install(FILES ${ATTNCHECK_MODULE_DIR}/libattncheck_libtorch.so DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT attncheck)
endif()
install(FILES ${PROJECT_SOURCE_DIR}/include/attncheck/adapter.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/attncheck COMPONENT attncheck)
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/attncheckConfig.cmake.in
  ${PROJECT_BINARY_DIR}/attncheckConfig.cmake
  INSTALL_DESTINATION ${ATTNCHECK_INSTALL_CMAKEDIR}
  PATH_VARS CMAKE_INSTALL_BINDIR CMAKE_INSTALL_INCLUDEDIR)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/attncheckConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES
  ${PROJECT_BINARY_DIR}/attncheckConfig.cmake
  ${PROJECT_BINARY_DIR}/attncheckConfigVersion.cmake
  ${CMAKE_CURRENT_LIST_DIR}/AttncheckAddGate.cmake
  ${CMAKE_CURRENT_LIST_DIR}/AttncheckAddCorpus.cmake
  ${CMAKE_CURRENT_LIST_DIR}/AttncheckExpectExit.cmake
  DESTINATION ${ATTNCHECK_INSTALL_CMAKEDIR} COMPONENT attncheck)
install(FILES ${PROJECT_SOURCE_DIR}/examples/plugin/example_plugin.c
  DESTINATION ${CMAKE_INSTALL_DATADIR}/attncheck/examples/plugin COMPONENT attncheck)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/examples/downstream/
  DESTINATION ${CMAKE_INSTALL_DATADIR}/attncheck/examples/downstream COMPONENT attncheck
  PATTERN install_test.cmake EXCLUDE)
# The walkthrough, its paths naming the install (AttncheckInstallReadme.cmake).
install(CODE "set(README \"${PROJECT_SOURCE_DIR}/examples/plugin/README.md\")
  set(BINDIR \"${CMAKE_INSTALL_BINDIR}\")
  set(INCLUDEDIR \"${CMAKE_INSTALL_INCLUDEDIR}\")
  set(DATADIR \"${CMAKE_INSTALL_DATADIR}\")
  include(\"${CMAKE_CURRENT_LIST_DIR}/AttncheckInstallReadme.cmake\")" COMPONENT attncheck)
