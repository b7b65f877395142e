// The example plugins' names for tests (examples/plugin/CMakeLists.txt builds one
// library per variant into ATTNCHECK_EXAMPLE_PLUGIN_DIR, defined for the tests).
#pragma once

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "attncheck/adapter.h"

#ifndef ATTNCHECK_EXAMPLE_PLUGIN_DIR
#error "ATTNCHECK_EXAMPLE_PLUGIN_DIR must name the folder of the example plugins"
#endif

namespace attncheck::test {

// "plugin:<dir>/lib<variant>.so", the adapter name of an example plugin variant.
inline std::string PluginName(const std::string& variant) {
  return std::string("plugin:") + ATTNCHECK_EXAMPLE_PLUGIN_DIR + "/lib" + variant + ".so";
}

// The version fields of a variant's table, read straight through dlopen and the entry
// point (no validation): what an older or newer build of the plugin declares.
struct TableVersion {
  uint32_t abi_version = 0, struct_size = 0;
};
inline TableVersion ExampleTableVersion(const std::string& variant) {
  TableVersion version;
  void* library = dlopen((std::string(ATTNCHECK_EXAMPLE_PLUGIN_DIR) + "/lib" + variant + ".so").c_str(), RTLD_NOW);
  if (library == nullptr) {
    ADD_FAILURE() << dlerror();
    return version;
  }
  const auto entry = reinterpret_cast<attncheck_adapter_entry_fn>(dlsym(library, ATTNCHECK_ADAPTER_ENTRY));
  if (entry == nullptr) {
    ADD_FAILURE() << variant << ": no " << ATTNCHECK_ADAPTER_ENTRY;
  } else {
    version = {entry()->abi_version, entry()->struct_size};
  }
  dlclose(library);
  return version;
}

}  // namespace attncheck::test
