// <report-dir>/in-flight.json: the cases the gate is about to hand to in-process
// adapters, rewritten in place once per case and removed when the run ends, so
// a hard crash of the gate (a segfault in a plugin) leaves the case that caused it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "cases/case.h"

namespace attncheck::cli {

// True when the adapter `name` runs inside this process (no isolated: or exec: scheme).
bool RunsInProcess(std::string_view name);

// {"in_flight": [{"law", "adapter", "case_index", "case"}, …]}: one entry per
// law × adapter pair running now (pairs run in parallel with --jobs). Thread-safe.
class InFlightFile {
 public:
  explicit InFlightFile(const std::string& report_dir);
  ~InFlightFile();  // removes the file: the run ended without a hard crash
  InFlightFile(const InFlightFile&) = delete;
  InFlightFile& operator=(const InFlightFile&) = delete;

  // Case `case_index` of `law` is about to run on `adapter` in pair `slot`.
  void Record(size_t slot, std::string_view law, std::string_view adapter, const Case& c, uint64_t case_index);
  // Pair `slot` has no case in flight any more.
  void Clear(size_t slot);

 private:
  void WriteLocked();

  std::string path_;
  int fd_ = -1;         // opened on the first write
  size_t written_ = 0;  // length of the file (the longest record so far)
  std::mutex mutex_;
  std::map<size_t, nlohmann::json> running_;  // slot → entry
};

}  // namespace attncheck::cli
