// <report-dir>/findings.jsonl: every failing or erroring case of a run, one JSON
// object per line, appended and fsync'ed the moment it is found, so a harness
// killed mid-run (by CI, by a hung adapter's wall-clock limit, by OOM) keeps
// every finding so far. Each line is self-contained: it carries the case itself.
// `gate` and the `fuzz` parent are its writers.
#pragma once

#include <mutex>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "reports/markdown.h"

namespace attncheck {

// One line's fields: {"unix_time", "pid", "law", "adapter", "outcome", "fault",
// "seed", "case_index", "case_hash", "message", "max_abs", "bound", "case"} of
// `report` (its case and verdict as written).
nlohmann::json FindingJson(const FailureReport& report);
// The same with where it was written: "report" (the folder) and "replay" (the
// command that reruns `case_file`). A caller adds its own fields after these.
nlohmann::json FindingJson(const FailureReport& report, std::string_view folder, std::string_view case_file);

// The file, opened once (by Open, or by the first Append) and appended to with
// one write(2) of one whole line per finding on an O_APPEND descriptor, then
// fsync. Thread-safe. A process that forks keeps it only in the parent (Close it
// in the child).
class FindingsLog {
 public:
  explicit FindingsLog(const std::string& report_dir);
  ~FindingsLog();
  FindingsLog(const FindingsLog&) = delete;
  FindingsLog& operator=(const FindingsLog&) = delete;

  // Creates the file now (an empty log of a run that finds nothing). Throws
  // InputError naming the file when it cannot be opened.
  void Open();
  // Appends `line` as one line and fsyncs it. Throws std::runtime_error naming
  // the file when it cannot be written.
  void Append(const nlohmann::json& line);
  void Close();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
  std::mutex mutex_;
};

}  // namespace attncheck
