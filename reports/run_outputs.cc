// summary.json, --json, --junit and index.html of a run (run_outputs.h).
#include "reports/run_outputs.h"

#include <filesystem>

#include "cases/case_json.h"
#include "reports/html.h"

namespace attncheck {

void WriteRunOutputs(const RunOutputs& outputs, const RunSummary& summary) {
  const std::string summary_json = SummaryJson(summary).dump(2) + "\n";
  WriteFileAtomic((std::filesystem::path(outputs.report_dir) / "summary.json").string(), summary_json);
  if (!outputs.json.empty()) WriteFileAtomic(outputs.json, summary_json);
  if (!outputs.junit.empty()) WriteFileAtomic(outputs.junit, JunitXml(summary));
  WriteIndexHtml(outputs.report_dir, summary);
}

}  // namespace attncheck
