// The accuracy profile (issue 13 point 5): how close each adapter runs to the
// tolerance of its declared accuracy, per dtype × value profile, as quantiles of
// error / bound over every tolerance comparison and the worst cases. A ratio ≤ 1
// is within what the declaration allows (a pass); only beyond it is a fail.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "cases/case.h"
#include "properties/verdict.h"

namespace attncheck {

struct AccuracyCase {
  double ratio = 0.0;  // error / bound at the verdict's worst element
  std::string law, case_line;
};

// One adapter's (or one law × adapter pair's) samples.
struct AccuracyProfile {
  static constexpr size_t kWorstKept = 3;
  struct Cell {
    std::vector<double> ratios;
    std::vector<AccuracyCase> worst;  // the kWorstKept largest ratios, largest first
  };
  std::map<std::pair<Dtype, ValueProfile>, Cell> cells;

  // A pass or fail of a comparison against the tolerance of "out" (a finite,
  // positive bound); other verdicts (exact laws, skips, errors) are not samples.
  void Add(const Case& c, std::string_view law, const Verdict& v);
  void Merge(const AccuracyProfile& other);
};

// [{"adapter", "dtype", "profile", "comparisons", "p50", "p90", "p99", "max",
//   "over_bound", "worst": [{"ratio", "law", "case"}]}], adapters in the order of `profiles`.
nlohmann::json AccuracyJson(const std::vector<std::pair<std::string, AccuracyProfile>>& profiles);
// The same as a short text table ("" when there is no sample).
std::string AccuracyTable(const std::vector<std::pair<std::string, AccuracyProfile>>& profiles);

}  // namespace attncheck
