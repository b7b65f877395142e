// <report-dir>/findings.jsonl: every failing or erroring case of a run, one JSON
// object per line, appended and fsync'ed the moment it is found, so a harness
// killed mid-run (by CI, by a hung adapter's wall-clock limit, by OOM) keeps
// every finding so far. Each line is self-contained: it carries the case itself.
#pragma once

#include <string>

#include "reports/markdown.h"

namespace attncheck::cli {

// Appends one line for `report` (written to `written`, or not written when
// `written.dir` is empty: over the per-pair report limit). Thread-safe. A write
// error throws std::runtime_error naming the file.
void AppendFinding(const std::string& report_dir, const FailureReport& report, const WrittenReport& written);

}  // namespace attncheck::cli
