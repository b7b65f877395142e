// The example plugins' names for tests (examples/plugin/CMakeLists.txt builds one
// library per variant into ATTNCHECK_EXAMPLE_PLUGIN_DIR, defined for the tests).
#pragma once

#include <string>

#ifndef ATTNCHECK_EXAMPLE_PLUGIN_DIR
#error "ATTNCHECK_EXAMPLE_PLUGIN_DIR must name the folder of the example plugins"
#endif

namespace attncheck::test {

// "plugin:<dir>/lib<variant>.so", the adapter name of an example plugin variant.
inline std::string PluginName(const std::string& variant) {
  return std::string("plugin:") + ATTNCHECK_EXAMPLE_PLUGIN_DIR + "/lib" + variant + ".so";
}

}  // namespace attncheck::test
