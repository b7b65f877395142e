// Coverage of a law × adapter pair: checked / planned, read from the outcome table.
#include "reports/coverage.h"

#include <fmt/format.h>

#include "properties/outcome.h"

namespace attncheck {

int CheckedCases(const LawResult& r) {
  int checked = 0;
  for (const OutcomeInfo& info : AllOutcomes())
    if (info.checked) checked += r.count(info.outcome);
  return checked;
}

double Coverage(const LawResult& r) {
  const int planned = r.planned_cases > 0 ? r.planned_cases : r.cases;
  return planned > 0 ? static_cast<double>(CheckedCases(r)) / planned : 0.0;
}

bool UnderCovered(const LawResult& r) { return Coverage(r) < kUnderCovered; }

bool NothingChecked(const LawResult& r) { return CheckedCases(r) == 0; }

std::string CoverageCell(const LawResult& r) {
  if (NothingChecked(r)) return "nothing checked";
  const std::string percent = fmt::format("{:.0f}%", 100.0 * Coverage(r));
  return UnderCovered(r) ? percent + " under-covered" : percent;
}

std::string CoverageLine(const LawResult& r) {
  std::string line = fmt::format("{} of {} planned cases checked ({:.0f}%)", CheckedCases(r),
                                 r.planned_cases > 0 ? r.planned_cases : r.cases, 100.0 * Coverage(r));
  if (r.skipped > 0) line += "; most skipped: " + r.MostCommonSkipReason();
  return line;
}

std::vector<const LawResult*> BelowCoverage(const RunSummary& summary, double minimum) {
  std::vector<const LawResult*> below;
  for (const LawResult& r : summary.results)
    if (Coverage(r) < minimum) below.push_back(&r);
  return below;
}

}  // namespace attncheck
