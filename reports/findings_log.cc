// findings.jsonl (findings_log.h): the fields of one finding, and the appender
// (one write(2) of one line per finding on an O_APPEND descriptor, then fsync).
#include "reports/findings_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include <fmt/format.h>

#include "cases/case_json.h"
#include "cases/error.h"
#include "reports/replay_command.h"

namespace attncheck {

nlohmann::json FindingJson(const FailureReport& report) {
  const Verdict& v = report.verdict;
  return {{"unix_time", std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count()},
          {"pid", static_cast<int64_t>(getpid())},
          {"law", report.law},
          {"adapter", report.adapter},
          {"outcome", std::string(Name(v.outcome))},
          {"fault", std::string(Name(v.fault))},
          {"seed", report.seed},
          {"case_index", report.case_index},
          {"case_hash", Hash8(report.c)},
          {"message", v.message},
          {"max_abs", v.max_abs},
          {"bound", v.bound},
          {"case", ToJson(report.c)}};
}

nlohmann::json FindingJson(const FailureReport& report, std::string_view folder, std::string_view case_file) {
  nlohmann::json line = FindingJson(report);
  line["report"] = folder;
  line["replay"] = ReportReplayCommand(report, case_file);
  return line;
}

FindingsLog::FindingsLog(const std::string& report_dir)
    : path_((std::filesystem::path(report_dir) / "findings.jsonl").string()) {}

FindingsLog::~FindingsLog() { Close(); }

void FindingsLog::Open() {
  if (fd_ >= 0) return;
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) throw InputError(path_, "", std::string("cannot open: ") + std::strerror(errno));
}

void FindingsLog::Append(const nlohmann::json& line) {
  const std::string text = line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  const std::lock_guard<std::mutex> lock(mutex_);
  Open();
  for (std::string_view rest = text; !rest.empty();) {
    const ssize_t put = ::write(fd_, rest.data(), rest.size());
    if (put < 0 && errno == EINTR) continue;
    if (put < 0) throw std::runtime_error(fmt::format("{}: cannot append: {}", path_, std::strerror(errno)));
    rest.remove_prefix(static_cast<size_t>(put));
  }
  if (::fsync(fd_) != 0) throw std::runtime_error(fmt::format("{}: cannot append: {}", path_, std::strerror(errno)));
}

void FindingsLog::Close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

}  // namespace attncheck
