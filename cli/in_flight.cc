// The gate's in-flight record (cli/in_flight.h): one file kept open and rewritten
// in place by one pwrite of the whole record, padded with spaces (valid trailing
// JSON white space) to the length of the longest record so far. A crash of the
// process cannot stop a system call halfway, so the file always holds one whole
// record; no fsync: the page cache outlives the process.
#include "cli/in_flight.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "cases/error.h"

#include "cases/case_json.h"

namespace attncheck::cli {

bool RunsInProcess(std::string_view name) { return !name.starts_with("isolated:") && !name.starts_with("exec:"); }

InFlightFile::InFlightFile(const std::string& report_dir)
    : path_((std::filesystem::path(report_dir) / "in-flight.json").string()) {}

InFlightFile::~InFlightFile() {
  if (fd_ < 0) return;  // never written
  ::close(fd_);
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
  std::string text = nlohmann::json{{"in_flight", std::move(in_flight)}}.dump() + "\n";
  if (text.size() < written_) text.append(written_ - text.size(), ' ');
  if (fd_ < 0) {
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) throw InputError(path_, "", std::string("cannot open: ") + std::strerror(errno));
  }
  if (::pwrite(fd_, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size())) {
    throw InputError(path_, "", std::string("cannot write: ") + std::strerror(errno));
  }
  written_ = text.size();
}

}  // namespace attncheck::cli
