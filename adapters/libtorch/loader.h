// Loads the libtorch adapters from their module, libattncheck_libtorch.so, on
// first use, so that a program gating anything else never loads PyTorch. Part of
// the registry (the program), never of the module.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "adapters/adapter.h"

namespace attncheck {

// Where the module is: the first existing file of $ATTNCHECK_LIBTORCH_MODULE (when
// set, the only place looked), <program dir>/, <program dir>/.. (test programs in
// build/tests) and <program dir>/<bin-to-lib> (an install's lib dir). `missing`
// says why when none exists.
struct LibtorchModuleLookup {
  std::string path;
  std::string missing;
};
LibtorchModuleLookup FindLibtorchModule();

// A new libtorch adapter `name` (a kLibtorchAdapters name) from the module, which
// is dlopen'ed once per process. Throws InputError::Option("--adapter", "<name>
// is unavailable: <reason>") when the module or libtorch cannot load.
std::unique_ptr<Adapter> MakeLibtorchAdapter(std::string_view name);

}  // namespace attncheck
