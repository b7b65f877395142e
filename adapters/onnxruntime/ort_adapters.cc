// Finds node, backend.mjs and the onnxruntime-node packages for the ort-* adapters
// (ort_adapters.h); the registry lists them as unavailable with the reason otherwise.
#include "adapters/onnxruntime/ort_adapters.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <vector>

#include <fmt/format.h>

#include "adapters/backend_script.h"
#include "adapters/process/process_adapter.h"

namespace attncheck {
namespace {

namespace fs = std::filesystem;

std::string FindOnPath(const char* program) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path == nullptr ? "" : path);
  std::string dir;
  std::error_code error;
  while (std::getline(dirs, dir, ':')) {
    if (dir.empty()) continue;
    const fs::path candidate = fs::path(dir) / program;
    if (fs::is_regular_file(candidate, error) && access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  return "";
}

}  // namespace

OrtLookup FindOrtBackend() {
  const std::string node = FindOnPath("node");
  if (node.empty()) return {{}, "node not found on PATH (scripts/install-deps.sh --with-onnxruntime)"};
  const fs::path script = BackendScript(fs::path("onnxruntime") / "backend.mjs");
  std::error_code error;
  if (!fs::is_regular_file(script, error)) return {{}, fmt::format("{} not found", script.string())};
  const char* given = std::getenv("ATTNCHECK_ONNXRUNTIME_DIR");
  const fs::path packages = given != nullptr && *given != '\0'
                                ? fs::path(given)
                                : fs::path(ATTNCHECK_SOURCE_DIR) / "third_party" / "onnxruntime";
  for (const char* package : {"onnxruntime-node", "onnx-proto"}) {
    if (!fs::is_regular_file(packages / "node_modules" / package / "package.json", error)) {
      return {{}, fmt::format("npm package {} not installed in {} (scripts/install-deps.sh --with-onnxruntime)",
                              package, packages.string())};
    }
  }
  return {fmt::format("ATTNCHECK_ONNXRUNTIME_DIR={} exec {} {}",
                      ShellSingleQuoted(fs::absolute(packages).string()), ShellSingleQuoted(node),
                      ShellSingleQuoted(script.string())),
          {}};
}

std::string OrtCommand(const OrtLookup& lookup, const OrtAdapterName& adapter) {
  return fmt::format("{} --op {} --dtype {}", lookup.command_prefix, adapter.op, adapter.dtype);
}

std::unique_ptr<Adapter> MakeOrtAdapter(const OrtLookup& lookup, const OrtAdapterName& adapter) {
  return process::MakeExecAdapter(OrtCommand(lookup, adapter), std::string(adapter.name));
}

}  // namespace attncheck
