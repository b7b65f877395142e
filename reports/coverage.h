// A pair's coverage, after Hypothesis's filter health check: the cases whose
// outcome counts as checked (properties/outcome.h `checked`; a skip is not) over
// the cases planned. Under kUnderCovered a pair is "under-covered"; with nothing
// checked it is never reported as a pass.
#pragma once

#include <string>
#include <vector>

#include "cases/features.h"
#include "reports/summary.h"

namespace attncheck {

// Coverage below this marks a pair under-covered in the table, JSON, JUnit and HTML.
inline constexpr double kUnderCovered = 0.5;
// A declared feature pair (cases/features.h) in fewer than this share of a law ×
// adapter pair's planned cases is an under-covered feature pair (issue 26 point 3).
inline constexpr double kUnderCoveredFeaturePair = kFeaturePairShare;  // cases/features.h

// Cases whose outcome is `checked` in the outcome table.
int CheckedCases(const LawResult& r);
// CheckedCases / planned_cases (the cases run when nothing was planned); 0 when neither.
double Coverage(const LawResult& r);
bool UnderCovered(const LawResult& r);
bool NothingChecked(const LawResult& r);

// The table cell: "100%", "22% under-covered" or "nothing checked".
std::string CoverageCell(const LawResult& r);
// One line: "45 of 200 planned cases checked (22%)[; most skipped: REASON]".
std::string CoverageLine(const LawResult& r);

// The pairs whose coverage is below `minimum` (none when minimum is 0).
std::vector<const LawResult*> BelowCoverage(const RunSummary& summary, double minimum);

// One declared feature pair of a law × adapter pair and its share of the planned
// cases (the cases run when nothing was planned).
struct FeaturePairShare {
  std::string pair;
  int cases = 0;
  double share = 0.0;
  PairCount count;
  // It cannot reach kUnderCoveredFeaturePair by construction (max_share below it).
  bool unreachable() const { return count.max_share < kUnderCoveredFeaturePair; }
};
// Every declared feature pair of `r`, lowest share first (then by name).
std::vector<FeaturePairShare> FeaturePairShares(const LawResult& r);
// Those below kUnderCoveredFeaturePair.
std::vector<FeaturePairShare> UnderCoveredFeaturePairs(const LawResult& r);
// "alibi × softcap: 12 of 1000 planned cases (1.2%)[; at most 1.8% by construction
// (mask × encoding: 56 pairs that exclude each other)]".
std::string FeaturePairLine(const FeaturePairShare& p, const LawResult& r);

}  // namespace attncheck
