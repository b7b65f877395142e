// A pair's coverage, after Hypothesis's filter health check: the cases whose
// outcome counts as checked (properties/outcome.h `checked`; a skip is not) over
// the cases planned. Under kUnderCovered a pair is "under-covered"; with nothing
// checked it is never reported as a pass.
#pragma once

#include <string>
#include <vector>

#include "reports/summary.h"

namespace attncheck {

// Coverage below this marks a pair under-covered in the table, JSON, JUnit and HTML.
inline constexpr double kUnderCovered = 0.5;

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

}  // namespace attncheck
