// The entry point of libattncheck_libtorch.so: the program dlopens the module on
// first use of a libtorch adapter (loader.h) and asks it for one adapter by name.
// The module resolves the harness's own symbols from the program that loads it.
#include <memory>
#include <string_view>

#include "adapters/libtorch/libtorch_adapter.h"
#include "adapters/libtorch/module_abi.h"

extern "C" __attribute__((visibility("default"))) attncheck::Adapter* attncheck_libtorch_make(const char* name) {
  using attncheck::kLibtorchAdapters;
  const auto factories = attncheck::LibtorchAdapterFactories();
  for (size_t i = 0; i < kLibtorchAdapters.size(); ++i) {
    if (kLibtorchAdapters[i].name == std::string_view(name)) return factories[i]().release();
  }
  return nullptr;
}

extern "C" __attribute__((visibility("default"))) int attncheck_libtorch_abi() {
  return attncheck::kLibtorchModuleAbi;
}
