// The files that close a run of `gate` or `fuzz`, written by one function for
// both: <report-dir>/summary.json, <report-dir>/index.html, and on request the
// same JSON to --json and JUnit XML to --junit.
#pragma once

#include <string>

#include "reports/summary.h"

namespace attncheck {

struct RunOutputs {
  std::string report_dir;
  std::string json;   // --json FILE, or empty
  std::string junit;  // --junit FILE, or empty
};

// Writes them (atomic writes) for `summary`.
void WriteRunOutputs(const RunOutputs& outputs, const RunSummary& summary);

}  // namespace attncheck
