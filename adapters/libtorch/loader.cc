// The libtorch module loader (loader.h): looks for the module beside the program,
// dlopen(RTLD_NOW | RTLD_LOCAL) once, checks its ABI version, then makes adapters
// through its entry point. A failure is remembered and reported the same way on
// every later request.
#include "adapters/libtorch/loader.h"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <vector>

#include <fmt/format.h>

#include "adapters/libtorch/module_abi.h"
#include "cases/error.h"

#ifndef ATTNCHECK_BIN_TO_LIB
#define ATTNCHECK_BIN_TO_LIB "../lib"
#endif

namespace attncheck {
namespace {

namespace fs = std::filesystem;

using MakeFunction = Adapter* (*)(const char*);
using AbiFunction = int (*)();

struct Module {
  MakeFunction make = nullptr;
  std::string missing;  // why it did not load
};

std::string FirstLine(const char* text) {
  const std::string s = text == nullptr ? "unknown error" : text;
  return s.substr(0, s.find('\n'));
}

Module Load() {
  const LibtorchModuleLookup lookup = FindLibtorchModule();
  if (lookup.path.empty()) return {nullptr, lookup.missing};
  dlerror();
  void* handle = dlopen(lookup.path.c_str(), RTLD_NOW | RTLD_LOCAL);  // never closed: adapters outlive callers
  if (handle == nullptr) return {nullptr, fmt::format("cannot load {}: {}", lookup.path, FirstLine(dlerror()))};
  const auto abi = reinterpret_cast<AbiFunction>(dlsym(handle, kLibtorchAbiSymbol));
  const auto make = reinterpret_cast<MakeFunction>(dlsym(handle, kLibtorchMakeSymbol));
  if (abi == nullptr || make == nullptr) return {nullptr, fmt::format("{}: not an attncheck libtorch module", lookup.path)};
  if (abi() != kLibtorchModuleAbi) {
    return {nullptr, fmt::format("{}: module ABI {} but this program speaks {} (rebuild it)", lookup.path, abi(),
                                 kLibtorchModuleAbi)};
  }
  return {make, {}};
}

const Module& TheModule() {
  static const Module module = Load();
  return module;
}

}  // namespace

LibtorchModuleLookup FindLibtorchModule() {
  if (const char* given = std::getenv("ATTNCHECK_LIBTORCH_MODULE"); given != nullptr && *given != '\0') {
    if (fs::is_regular_file(given)) return {given, {}};
    return {{}, fmt::format("ATTNCHECK_LIBTORCH_MODULE={}: no such file", given)};
  }
  std::error_code error;
  const fs::path program_dir = fs::read_symlink("/proc/self/exe", error).parent_path();
  const std::vector<fs::path> dirs = {program_dir, program_dir.parent_path(), program_dir / ATTNCHECK_BIN_TO_LIB};
  for (const fs::path& dir : dirs) {
    const fs::path candidate = (dir / kLibtorchModuleFile).lexically_normal();
    if (fs::is_regular_file(candidate, error)) return {candidate.string(), {}};
  }
  // `make gate` builds the program alone; the module comes with `make build` / `make test`
  return {{}, fmt::format("{} not found beside {} or in {} (the build made the program only: `make build`, or "
                          "`cmake --build <build dir> --target attncheck_libtorch_module`, builds it)",
                          kLibtorchModuleFile, program_dir.string(),
                          (program_dir / ATTNCHECK_BIN_TO_LIB).lexically_normal().string())};
}

std::unique_ptr<Adapter> MakeLibtorchAdapter(std::string_view name) {
  const Module& module = TheModule();
  if (module.make == nullptr) {
    throw InputError::Option("--adapter", fmt::format("{} is unavailable: {}", name, module.missing));
  }
  std::unique_ptr<Adapter> adapter(module.make(std::string(name).c_str()));
  if (adapter == nullptr) {
    throw InputError::Option("--adapter", fmt::format("{} is unavailable: the module does not know it", name));
  }
  return adapter;
}

}  // namespace attncheck
