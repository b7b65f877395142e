// findings.jsonl appender (findings_log.h): one write(2) of one line per finding
// on an O_APPEND descriptor, then fsync, under a process-wide lock.
#include "cli/findings_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <mutex>
#include <stdexcept>

#include "cases/case_json.h"

namespace attncheck::cli {

void AppendFinding(const std::string& report_dir, const FailureReport& report, const WrittenReport& written) {
  const Verdict& v = report.verdict;
  nlohmann::json line = {
      {"unix_time", std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count()},
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
  if (!written.dir.empty()) {
    line["report"] = written.dir;
    line["replay"] = ReplayCommand(written.case_file, report.adapter, report.law);
  }
  const std::string text = line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  const std::string path = (std::filesystem::path(report_dir) / "findings.jsonl").string();

  static std::mutex mutex;
  const std::lock_guard<std::mutex> lock(mutex);
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t put = write(fd, text.data() + done, text.size() - done);
    if (put < 0 && errno == EINTR) continue;
    if (put < 0) {
      const int error = errno;
      close(fd);
      throw std::runtime_error(fmt::format("{}: cannot append: {}", path, std::strerror(error)));
    }
    done += static_cast<size_t>(put);
  }
  fsync(fd);
  close(fd);
}

}  // namespace attncheck::cli
