// Finds a Python with torch 2.13, backend.py and the kit for the torch-* adapters
// (torch_adapters.h); the registry lists them as unavailable with the reason otherwise.
#include "adapters/torch/torch_adapters.h"

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
constexpr std::string_view kTorchSeries = "2.13.";

// torch's version as installed for `python`: the dist-info folder of its environment
// (<prefix>/lib/python3.*/site-packages/torch-VERSION.dist-info, a venv or a prefix
// install), found without starting Python; empty when there is none.
std::string InstalledTorchVersion(const fs::path& python) {
  const fs::path prefix = fs::absolute(python).parent_path().parent_path();
  const std::regex dist_info(R"(torch-([0-9][^-]*)\.dist-info)");
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

TorchLookup FindTorchBackend() {
  const char* given = std::getenv("ATTNCHECK_TORCH_PYTHON");
  const fs::path python = given != nullptr && *given != '\0'
                              ? fs::path(given)
                              : fs::path(ATTNCHECK_SOURCE_DIR) / "third_party" / "venv" / "bin" / "python";
  std::error_code error;
  if (!fs::exists(python, error) || access(python.c_str(), X_OK) != 0) {
    return {{}, fmt::format("no Python at {} ({})", python.string(), kInstall)};
  }
  const std::string version = InstalledTorchVersion(python);
  if (version.empty()) return {{}, fmt::format("torch is not installed for {} ({})", python.string(), kInstall)};
  if (version.rfind(kTorchSeries, 0) != 0) {
    return {{}, fmt::format("torch {} installed for {}, 2.13 expected ({})", version, python.string(), kInstall)};
  }
  const fs::path script = BackendScript(fs::path("torch") / "backend.py");
  const fs::path kit = script.parent_path().parent_path().parent_path() / "python";
  if (!fs::is_regular_file(script, error)) return {{}, fmt::format("{} not found", script.string())};
  if (!fs::is_regular_file(kit / "attncheck" / "__init__.py", error)) {
    return {{}, fmt::format("the attncheck kit is not in {}", kit.string())};
  }
  return {fmt::format("PYTHONPATH={} exec {} {}", ShellSingleQuoted(fs::absolute(kit).string()),
                      ShellSingleQuoted(fs::absolute(python).string()), ShellSingleQuoted(script.string())),
          {}};
}

std::string TorchCommand(const TorchLookup& lookup, const TorchAdapterName& adapter) {
  return fmt::format("{} --variant {}", lookup.command_prefix, adapter.variant);
}

std::unique_ptr<Adapter> MakeTorchAdapter(const TorchLookup& lookup, const TorchAdapterName& adapter) {
  return process::MakeExecAdapter(TorchCommand(lookup, adapter), std::string(adapter.name),
                                  std::chrono::seconds(adapter.call_timeout_s));
}

}  // namespace attncheck
