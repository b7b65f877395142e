// Samples, quantiles and the two writers of the accuracy profile (accuracy_profile.h).
#include "reports/accuracy_profile.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace attncheck {
namespace {

// Nearest-rank quantile q of sorted values (not empty).
double Quantile(const std::vector<double>& sorted, double q) {
  const size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

void KeepWorst(std::vector<AccuracyCase>& worst, AccuracyCase sample) {
  worst.push_back(std::move(sample));
  std::stable_sort(worst.begin(), worst.end(), [](const AccuracyCase& a, const AccuracyCase& b) { return a.ratio > b.ratio; });
  if (worst.size() > AccuracyProfile::kWorstKept) worst.resize(AccuracyProfile::kWorstKept);
}

struct Row {
  std::string adapter;
  Dtype dtype;
  ValueProfile profile;
  std::vector<double> sorted;
  const std::vector<AccuracyCase>* worst;
  int over_bound() const { return static_cast<int>(sorted.end() - std::upper_bound(sorted.begin(), sorted.end(), 1.0)); }
};

std::vector<Row> Rows(const std::vector<std::pair<std::string, AccuracyProfile>>& profiles) {
  std::vector<Row> rows;
  for (const auto& [adapter, profile] : profiles)
    for (const auto& [key, cell] : profile.cells) {
      if (cell.ratios.empty()) continue;
      Row row{adapter, key.first, key.second, cell.ratios, &cell.worst};
      std::sort(row.sorted.begin(), row.sorted.end());
      rows.push_back(std::move(row));
    }
  return rows;
}

}  // namespace

void AccuracyProfile::Add(const Case& c, std::string_view law, const Verdict& v) {
  if (v.outcome != Outcome::kPass && v.outcome != Outcome::kFail) return;
  if (v.worst.tensor != "out" || !(v.worst.bound > 0.0) || !std::isfinite(v.worst.bound)) return;
  const double ratio = std::abs(v.worst.error) / v.worst.bound;
  if (!std::isfinite(ratio)) return;  // a non-finite output is a failure of its own, not accuracy
  Cell& cell = cells[{c.dtype, c.profile}];
  cell.ratios.push_back(ratio);
  if (cell.worst.size() < kWorstKept || ratio > cell.worst.back().ratio) {
    KeepWorst(cell.worst, {ratio, std::string(law), ToLine(c)});
  }
}

void AccuracyProfile::Merge(const AccuracyProfile& other) {
  for (const auto& [key, theirs] : other.cells) {
    Cell& mine = cells[key];
    mine.ratios.insert(mine.ratios.end(), theirs.ratios.begin(), theirs.ratios.end());
    for (const AccuracyCase& sample : theirs.worst) KeepWorst(mine.worst, sample);
  }
}

nlohmann::json AccuracyJson(const std::vector<std::pair<std::string, AccuracyProfile>>& profiles) {
  nlohmann::json rows = nlohmann::json::array();
  for (const Row& row : Rows(profiles)) {
    nlohmann::json worst = nlohmann::json::array();
    for (const AccuracyCase& sample : *row.worst)
      worst.push_back({{"ratio", sample.ratio}, {"law", sample.law}, {"case", sample.case_line}});
    rows.push_back({{"adapter", row.adapter},
                    {"dtype", std::string(Name(row.dtype))},
                    {"profile", std::string(Name(row.profile))},
                    {"comparisons", row.sorted.size()},
                    {"p50", Quantile(row.sorted, 0.5)},
                    {"p90", Quantile(row.sorted, 0.9)},
                    {"p99", Quantile(row.sorted, 0.99)},
                    {"max", row.sorted.back()},
                    {"over_bound", row.over_bound()},
                    {"worst", std::move(worst)}});
  }
  return rows;
}

std::string AccuracyTable(const std::vector<std::pair<std::string, AccuracyProfile>>& profiles) {
  const std::vector<Row> rows = Rows(profiles);
  if (rows.empty()) return "";
  size_t width = 7;
  for (const Row& row : rows) width = std::max(width, row.adapter.size());
  std::string text = fmt::format("accuracy (error / bound of the declared accuracy; > 1 fails):\n"
                                 "  {:<{}}  {:<5}  {:<17}  {:>6}  {:>8}  {:>8}  {:>8}  {:>8}  {:>4}\n",
                                 "adapter", width, "dtype", "profile", "n", "p50", "p90", "p99", "max", ">1");
  for (const Row& row : rows) {
    text += fmt::format("  {:<{}}  {:<5}  {:<17}  {:>6}  {:>8.3g}  {:>8.3g}  {:>8.3g}  {:>8.3g}  {:>4}\n", row.adapter,
                        width, Name(row.dtype), Name(row.profile), row.sorted.size(), Quantile(row.sorted, 0.5),
                        Quantile(row.sorted, 0.9), Quantile(row.sorted, 0.99), row.sorted.back(), row.over_bound());
  }
  return text;
}

}  // namespace attncheck
