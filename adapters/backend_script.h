// Helpers of the adapters that start a script backend (ort-*, torch-*): where the script
// is (beside an installed program, else in this source tree) and shell quoting.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#ifndef ATTNCHECK_SOURCE_DIR
#define ATTNCHECK_SOURCE_DIR "."
#endif

namespace attncheck {

// s in single quotes for /bin/sh.
inline std::string ShellSingleQuoted(std::string_view s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// <program dir>/../share/attncheck/<relative> when installed, else <source>/adapters/<relative>.
inline std::filesystem::path BackendScript(const std::filesystem::path& relative) {
  namespace fs = std::filesystem;
  std::error_code error;
  const fs::path program_dir = fs::read_symlink("/proc/self/exe", error).parent_path();
  const fs::path installed = program_dir.parent_path() / "share" / "attncheck" / relative;
  if (fs::is_regular_file(installed, error)) return installed;
  return fs::path(ATTNCHECK_SOURCE_DIR) / "adapters" / relative;
}

}  // namespace attncheck
