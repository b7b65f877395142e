// The `plugin:<path>` adapter: a kernel built elsewhere, loaded from a shared
// library that speaks the C plugin ABI (include/attncheck/adapter.h). The table is
// validated strictly when the library is loaded; tensors are handed over in the
// case dtype (f16 / bf16 converted here); a plugin's error return becomes an
// exception carrying its last_error() text.
#pragma once

#include <memory>
#include <string_view>

#include "adapters/adapter.h"

namespace attncheck {

// Loads `path` (dlopen) and checks its table. Throws InputError(path, field,
// reason) — one line, exit code 2 in the program — when the library cannot be
// loaded, exports no entry point, or its table is malformed.
std::unique_ptr<Adapter> MakePluginAdapter(std::string_view path);

// One line for `attncheck list`.
inline constexpr std::string_view kPluginSchemeDescription =
    "a kernel in a shared library speaking the C plugin ABI (include/attncheck/adapter.h)";

}  // namespace attncheck
