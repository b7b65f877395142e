// run.json: the previous run's entries of a report folder, removed before the next run.
#include "reports/run_manifest.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "cases/case_json.h"
#include "cases/error.h"

namespace attncheck {
namespace fs = std::filesystem;
namespace {

constexpr const char* kManifestName = "run.json";

// The names under `field` of run.json; each must be one plain name in the folder.
std::vector<std::string> Names(const nlohmann::json& manifest, const char* field, const std::string& file) {
  std::vector<std::string> names;
  if (!manifest.contains(field)) return names;
  if (!manifest[field].is_array()) throw InputError(file, field, "expected an array of names");
  for (const nlohmann::json& name : manifest[field]) {
    if (!name.is_string()) throw InputError(file, field, "expected an array of names");
    const std::string s = name.get<std::string>();
    if (s.empty() || s == "." || s == ".." || s == kManifestName || s.find('/') != std::string::npos) {
      throw InputError(file, field, fmt::format("'{}' is not a name inside the report folder", s));
    }
    names.push_back(s);
  }
  return names;
}

// Folders directly in `report_dir` holding a case.json: failure folders.
size_t CountFailureFolders(const fs::path& report_dir) {
  size_t count = 0;
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator(report_dir, error)) {
    std::error_code ignored;
    if (entry.is_directory(ignored) && fs::exists(entry.path() / "case.json", ignored)) ++count;
  }
  return count;
}

}  // namespace

void WriteRunManifest(const std::string& report_dir, const RunManifest& manifest) {
  RunManifest sorted = manifest;
  std::sort(sorted.failure_folders.begin(), sorted.failure_folders.end());
  sorted.failure_folders.erase(std::unique(sorted.failure_folders.begin(), sorted.failure_folders.end()),
                               sorted.failure_folders.end());
  std::sort(sorted.files.begin(), sorted.files.end());
  const nlohmann::json json = {{"failure_folders", sorted.failure_folders}, {"files", sorted.files}};
  WriteFileAtomic((fs::path(report_dir) / kManifestName).string(), json.dump(2) + "\n");
}

std::vector<std::string> ClearPreviousRun(const std::string& report_dir) {
  std::vector<std::string> lines;
  const fs::path manifest_path = fs::path(report_dir) / kManifestName;
  std::error_code error;
  if (fs::exists(manifest_path, error)) {
    const std::string file = manifest_path.string();
    std::ifstream in(manifest_path);
    std::stringstream text;
    text << in.rdbuf();
    const nlohmann::json manifest = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
    if (!manifest.is_object()) throw InputError(file, "", "not a run.json object (remove it to start afresh)");
    size_t folders_removed = 0;
    std::vector<std::string> files_removed;
    for (const std::string& name : Names(manifest, "failure_folders", file)) {
      if (fs::remove_all(fs::path(report_dir) / name, error) > 0) ++folders_removed;
    }
    for (const std::string& name : Names(manifest, "files", file)) {
      if (fs::remove(fs::path(report_dir) / name, error)) files_removed.push_back(name);
    }
    fs::remove(manifest_path, error);
    if (folders_removed > 0 || !files_removed.empty()) {
      const std::string folders = fmt::format("{} failure folder{}", folders_removed, folders_removed == 1 ? "" : "s");
      lines.push_back(fmt::format("attncheck: report folder {}: removed the previous run's {}{}{}", report_dir,
                                  folders, files_removed.empty() ? "" : " and ", fmt::join(files_removed, ", ")));
    }
  }
  const size_t unowned = CountFailureFolders(report_dir);
  if (unowned > 0) {
    lines.push_back(fmt::format(
        "attncheck: warning: report folder {} holds {} failure folder{} no run.json lists (written by an older "
        "attncheck); they are left as they are, beside this run's: remove them or give a fresh --report-dir",
        report_dir, unowned, unowned == 1 ? "" : "s"));
  }
  return lines;
}

}  // namespace attncheck
