# Install-time step: writes the plugin walkthrough (examples/plugin/README.md) into
# the install with its paths naming the install (bin/attncheck, include/, share/)
# instead of the checkout's, and without its source-only sections. Run by
# install(CODE) with README, BINDIR, INCLUDEDIR and DATADIR set (relative dirs).
set(prefix "${CMAKE_INSTALL_PREFIX}")
set(examples "${prefix}/${DATADIR}/attncheck/examples")
file(READ "${README}" text)
# each source-only block, one at a time (a CMake regex would match greedily)
while(text MATCHES "<!-- source-only -->")
  string(FIND "${text}" "<!-- source-only -->" begin)
  string(FIND "${text}" "<!-- /source-only -->" end)
  string(LENGTH "<!-- /source-only -->\n" end_marker)
  math(EXPR after "${end} + ${end_marker}")
  string(SUBSTRING "${text}" 0 ${begin} head)
  string(SUBSTRING "${text}" ${after} -1 tail)
  set(text "${head}${tail}")
endwhile()
foreach(pair
    "examples/plugin/example_plugin.c|${examples}/plugin/example_plugin.c"
    "examples/downstream/|${examples}/downstream/"
    "-Iinclude |-I${prefix}/${INCLUDEDIR} "
    "`include/attncheck/adapter.h`|`${prefix}/${INCLUDEDIR}/attncheck/adapter.h`"
    "build/attncheck |${prefix}/${BINDIR}/attncheck "
    "/opt/attncheck|${prefix}")
  string(REPLACE "|" ";" pair "${pair}")
  list(GET pair 0 from)
  list(GET pair 1 to)
  string(REPLACE "${from}" "${to}" text "${text}")
endforeach()
set(out "$ENV{DESTDIR}${examples}/plugin/README.md")
message(STATUS "Installing: ${out} (paths of this install)")
file(WRITE "${out}" "${text}")
