// What the program and libattncheck_libtorch.so agree on: the module's file name
// and entry points, and a version that changes whenever the Adapter interface
// changes shape, so a stale module is refused instead of called.
#pragma once

#include <string_view>

namespace attncheck {

inline constexpr std::string_view kLibtorchModuleFile = "libattncheck_libtorch.so";
// `Adapter* attncheck_libtorch_make(const char* name)`: a new adapter (the caller
// owns it), or null for a name the module does not know.
inline constexpr const char* kLibtorchMakeSymbol = "attncheck_libtorch_make";
// `int attncheck_libtorch_abi()`: must equal kLibtorchModuleAbi.
inline constexpr const char* kLibtorchAbiSymbol = "attncheck_libtorch_abi";
inline constexpr int kLibtorchModuleAbi = 1;

}  // namespace attncheck
