// Coverage of a law × adapter pair: checked / planned, read from the outcome table.
#include "reports/coverage.h"

#include <algorithm>

#include <fmt/format.h>

#include "properties/outcome.h"

namespace attncheck {
namespace {

int PlannedCases(const LawResult& r) { return r.planned_cases > 0 ? r.planned_cases : r.cases; }

}  // namespace

int CheckedCases(const LawResult& r) {
  int checked = 0;
  for (const OutcomeInfo& info : AllOutcomes())
    if (info.checked) checked += r.count(info.outcome);
  return checked;
}

double Coverage(const LawResult& r) {
  const int planned = PlannedCases(r);
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
  std::string line = fmt::format("{} of {} planned cases checked ({:.0f}%)", CheckedCases(r), PlannedCases(r),
                                 100.0 * Coverage(r));
  if (r.skipped > 0) line += "; most skipped: " + r.MostCommonSkipReason();
  return line;
}

std::vector<FeaturePairShare> FeaturePairShares(const LawResult& r) {
  std::vector<FeaturePairShare> shares;
  const int planned = PlannedCases(r);
  for (const auto& [name, count] : r.feature_pairs) {
    shares.push_back({name, count.cases, planned > 0 ? static_cast<double>(count.cases) / planned : 0.0, count});
  }
  std::stable_sort(shares.begin(), shares.end(),
                   [](const FeaturePairShare& a, const FeaturePairShare& b) { return a.share < b.share; });
  return shares;
}

std::vector<FeaturePairShare> UnderCoveredFeaturePairs(const LawResult& r) {
  std::vector<FeaturePairShare> under = FeaturePairShares(r);
  std::erase_if(under, [](const FeaturePairShare& p) { return p.share >= kUnderCoveredFeaturePair; });
  return under;
}

std::string FeaturePairLine(const FeaturePairShare& p, const LawResult& r) {
  std::string line = fmt::format("{}: {} of {} planned cases ({:.1f}%)", p.pair, p.cases, PlannedCases(r), 100.0 * p.share);
  if (p.count.max_share == 0.0) {
    line += fmt::format("; never drawn together: {}", p.count.limit);
  } else if (p.unreachable()) {
    line += fmt::format("; at most {:.1f}% by construction ({})", 100.0 * p.count.max_share, p.count.limit);
  }
  return line;
}

std::vector<const LawResult*> BelowCoverage(const RunSummary& summary, double minimum) {
  std::vector<const LawResult*> below;
  for (const LawResult& r : summary.results)
    if (Coverage(r) < minimum) below.push_back(&r);
  return below;
}

}  // namespace attncheck
