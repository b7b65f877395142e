// Finds a Python with a library's packages, its backend script and the kit
// (python_backend.h), reading dist-info folders instead of starting Python.
#include "adapters/python_backend.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <regex>

#include <fmt/format.h>

#include "adapters/backend_script.h"
#include "adapters/process/process_adapter.h"

namespace attncheck {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kInstall = "scripts/install-deps.sh --with-python";

// `package`'s version as installed for `python`: the dist-info folder of its environment
// (<prefix>/lib/python3.*/site-packages/PACKAGE-VERSION.dist-info, a venv or a prefix
// install), found without starting Python; empty when there is none.
std::string InstalledVersion(const fs::path& python, std::string_view package) {
  const fs::path prefix = fs::absolute(python).parent_path().parent_path();
  const std::regex dist_info(fmt::format(R"({}-([0-9][^-]*)\.dist-info)", package));
  std::error_code error;
  for (const auto& lib : fs::directory_iterator(prefix / "lib", error)) {
    if (lib.path().filename().string().rfind("python3", 0) != 0) continue;
    for (const auto& entry : fs::directory_iterator(lib.path() / "site-packages", error)) {
      std::smatch match;
      const std::string name = entry.path().filename().string();
      if (std::regex_match(name, match, dist_info)) return match[1].str();
    }
  }
  return "";
}

}  // namespace

PythonLookup FindPythonBackend(const PythonLibrary& library) {
  const char* given = std::getenv(std::string(library.python_env).c_str());
  if (library.python_env_required && (given == nullptr || *given == '\0')) {
    return {{}, fmt::format("{} is not set (a Python whose torch is built with CUDA, on a machine with an NVIDIA GPU)",
                            library.python_env)};
  }
  const fs::path python = given != nullptr && *given != '\0'
                              ? fs::path(given)
                              : fs::path(ATTNCHECK_SOURCE_DIR) / "third_party" / "venv" / "bin" / "python";
  std::error_code error;
  if (!fs::exists(python, error) || access(python.c_str(), X_OK) != 0) {
    return {{}, fmt::format("no Python at {} ({})", python.string(), kInstall)};
  }
  for (const PythonPackage& package : library.packages) {
    if (package.name.empty()) continue;
    const std::string version = InstalledVersion(python, package.name);
    if (version.empty()) {
      return {{}, fmt::format("{} is not installed for {} ({})", package.name, python.string(), kInstall)};
    }
    if (!package.series.empty() && version.rfind(fmt::format("{}.", package.series), 0) != 0) {
      return {{}, fmt::format("{} {} installed for {}, {} expected ({})", package.name, version, python.string(),
                              package.series, kInstall)};
    }
  }
  const fs::path script = BackendScript(library.script);
  const fs::path kit = script.parent_path().parent_path().parent_path() / "python";
  if (!fs::is_regular_file(script, error)) return {{}, fmt::format("{} not found", script.string())};
  if (!fs::is_regular_file(kit / "attncheck" / "__init__.py", error)) {
    return {{}, fmt::format("the attncheck kit is not in {}", kit.string())};
  }
  return {fmt::format("PYTHONPATH={} exec {} {}", ShellSingleQuoted(fs::absolute(kit).string()),
                      ShellSingleQuoted(fs::absolute(python).string()), ShellSingleQuoted(script.string())),
          {}};
}

std::string PythonCommand(const PythonLookup& lookup, const PythonAdapterName& adapter) {
  return fmt::format("{} --variant {}", lookup.command_prefix, adapter.variant);
}

std::unique_ptr<Adapter> MakePythonAdapter(const PythonLookup& lookup, const PythonAdapterName& adapter) {
  return process::MakeExecAdapter(PythonCommand(lookup, adapter), std::string(adapter.name),
                                  std::chrono::seconds(adapter.call_timeout_s));
}

}  // namespace attncheck
