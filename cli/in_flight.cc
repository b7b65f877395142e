// The gate's in-flight record (cli/in_flight.h): rewritten with WriteFileAtomic
// (temp file + rename), so a crash mid-write never leaves half a file.
#include "cli/in_flight.h"

#include <filesystem>

#include "cases/case_json.h"

namespace attncheck::cli {

bool RunsInProcess(std::string_view name) { return !name.starts_with("isolated:") && !name.starts_with("exec:"); }

InFlightFile::InFlightFile(const std::string& report_dir)
    : path_((std::filesystem::path(report_dir) / "in-flight.json").string()) {}

InFlightFile::~InFlightFile() {
  std::error_code ignored;
  std::filesystem::remove(path_, ignored);
}

void InFlightFile::Record(size_t slot, std::string_view law, std::string_view adapter, const Case& c,
                          uint64_t case_index) {
  nlohmann::json entry = {{"law", law}, {"adapter", adapter}, {"case_index", case_index}, {"case", ToJson(c)}};
  const std::lock_guard<std::mutex> lock(mutex_);
  running_[slot] = std::move(entry);
  WriteLocked();
}

void InFlightFile::Clear(size_t slot) {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (running_.erase(slot) > 0) WriteLocked();
}

void InFlightFile::WriteLocked() {
  nlohmann::json in_flight = nlohmann::json::array();
  for (const auto& [slot, entry] : running_) in_flight.push_back(entry);
  WriteFileAtomic(path_, nlohmann::json{{"in_flight", std::move(in_flight)}}.dump() + "\n");
}

}  // namespace attncheck::cli
