// Run summary writers: JSON (the machine-readable record of a gate run), the
// terminal table, and JUnit XML for CI systems.
#include "reports/summary.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "cases/text.h"
#include "reports/coverage.h"
#include "reports/failure_groups.h"

namespace attncheck {
namespace reports {
namespace {

// The verdict without its per-element report data (kept per pair, so small).
Verdict Stripped(const Verdict& v) {
  Verdict s = v;
  s.expected_visibility.clear();
  s.expected_visibility.shrink_to_fit();
  s.influence.clear();
  s.influence.shrink_to_fit();
  s.row_errors = {};
  return s;
}

nlohmann::json Number(double x) {
  if (!std::isfinite(x)) return nullptr;
  return x;
}

// Width on a terminal: code points (UTF-8 continuation bytes do not count).
size_t DisplayWidth(std::string_view s) {
  size_t width = 0;
  for (char ch : s) {
    if ((static_cast<unsigned char>(ch) & 0xC0) != 0x80) ++width;
  }
  return width;
}

// At most `width` code points, with "…" when cut.
std::string Truncated(std::string_view s, size_t width) {
  if (DisplayWidth(s) <= width) return std::string(s);
  std::string out;
  size_t count = 0;
  for (size_t n = 0; n < s.size(); ++n) {
    const bool starts = (static_cast<unsigned char>(s[n]) & 0xC0) != 0x80;
    if (starts && ++count > width - 1) break;
    out += s[n];
  }
  return out + "…";
}

std::string Padded(std::string_view s, size_t width, bool right) {
  const size_t w = DisplayWidth(s);
  const std::string pad(w < width ? width - w : 0, ' ');
  return right ? pad + std::string(s) : std::string(s) + pad;
}

std::string FormatRatioCell(const LawResult& r) {
  if (!r.has_worst) return "-";
  const WorstElement& w = r.worst.worst;
  const double bound = w.bound != 0.0 ? w.bound : r.worst.bound;
  const double error = w.error != 0.0 ? w.error : r.worst.max_abs;
  return fmt::format("{:.3g} / {}", error, BoundText(bound));
}

// Text for XML character data and attribute values: escapes markup and drops
// characters XML 1.0 cannot hold (control characters other than tab / newline).
std::string XmlEscaped(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char ch : s) {
    const unsigned char u = static_cast<unsigned char>(ch);
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      case '\n': out += "&#10;"; break;
      case '\t': out += "&#9;"; break;
      default:
        if (u < 0x20 || u == 0x7F) break;  // not representable in XML 1.0
        out += ch;
    }
  }
  return out;
}

// Character data keeps its newlines readable.
std::string XmlText(std::string_view s) {
  std::string out;
  for (const char ch : s) {
    if (ch == '\n') {
      out += '\n';
    } else {
      out += XmlEscaped(std::string_view(&ch, 1));
    }
  }
  return out;
}

}  // namespace
}  // namespace reports

void LawResult::Add(const Verdict& v, std::span<const std::string> pairs) {
  ++cases;
  if (Info(v.outcome).checked) {
    for (const std::string& pair : pairs) ++feature_pairs[pair].cases;
  }
  switch (v.outcome) {
    case Outcome::kPass:
      ++passed;
      if (!worst_is_failure && (!has_worst || ErrorRatio(v) > ErrorRatio(worst))) {
        worst = reports::Stripped(v);
        has_worst = true;
      }
      break;
    case Outcome::kFail:
      ++failed;
      if (!worst_is_failure || ErrorRatio(v) > ErrorRatio(worst)) {
        worst = reports::Stripped(v);
        has_worst = true;
        worst_is_failure = true;
      }
      break;
    case Outcome::kSkip:
      ++skipped;
      ++skip_reasons[FirstLine(v.message)];
      break;
    case Outcome::kError:
      ++errors;
      break;
    case Outcome::kHazard:
      ++hazards;
      break;
  }
}

void LawResult::DeclarePairs(std::span<const FeaturePair> pairs) {
  for (const FeaturePair& pair : pairs)
    feature_pairs[pair.name] = {.cases = 0, .max_share = pair.max_share, .limit = pair.limit};
}

void LawResult::Merge(const LawResult& other) {
  cases += other.cases;
  passed += other.passed;
  failed += other.failed;
  skipped += other.skipped;
  errors += other.errors;
  hazards += other.hazards;
  for (const auto& [reason, count] : other.skip_reasons) skip_reasons[reason] += count;
  seconds += other.seconds;
  planned_cases += other.planned_cases;
  if (other.has_worst && (!has_worst || other.worst_is_failure > worst_is_failure ||
                          (other.worst_is_failure == worst_is_failure && ErrorRatio(other.worst) > ErrorRatio(worst)))) {
    worst = other.worst;
    has_worst = true;
    worst_is_failure = other.worst_is_failure;
  }
  failures.insert(failures.end(), other.failures.begin(), other.failures.end());
  unreported_failures += other.unreported_failures;
  accuracy.Merge(other.accuracy);
  for (const auto& [name, pair] : other.feature_pairs) {
    const auto [it, fresh] = feature_pairs.try_emplace(name, pair);
    if (!fresh) it->second.cases += pair.cases;
  }
}

int LawResult::count(Outcome o) const {
  switch (o) {
    case Outcome::kPass: return passed;
    case Outcome::kFail: return failed;
    case Outcome::kSkip: return skipped;
    case Outcome::kError: return errors;
    case Outcome::kHazard: return hazards;
  }
  return 0;
}

std::string LawResult::MostCommonSkipReason() const {
  std::string best;
  int best_count = 0;
  for (const auto& [reason, count] : skip_reasons) {
    if (count > best_count) {  // ties: the alphabetically first (map order)
      best = reason;
      best_count = count;
    }
  }
  return best;
}

namespace {

// Each adapter's accuracy profile, its law pairs merged, adapters in run order.
std::vector<std::pair<std::string, AccuracyProfile>> AccuracyByAdapter(const RunSummary& summary) {
  std::vector<std::pair<std::string, AccuracyProfile>> profiles;
  for (const LawResult& r : summary.results) {
    auto it = std::find_if(profiles.begin(), profiles.end(), [&](const auto& p) { return p.first == r.adapter; });
    if (it == profiles.end()) it = profiles.insert(profiles.end(), {r.adapter, AccuracyProfile{}});
    it->second.Merge(r.accuracy);
  }
  return profiles;
}

}  // namespace

nlohmann::json SummaryJson(const RunSummary& summary) {
  using reports::Number;
  nlohmann::json results = nlohmann::json::array();
  for (const LawResult& r : summary.results) {
    // Always an object (stable shape); b = h = i = j = −1 when no case passed or failed.
    const WorstElement& w = r.worst.worst;
    nlohmann::json worst = {
        {"b", w.b},
        {"h", w.h},
        {"i", w.i},
        {"j", w.reported_j()},
        {"got", Number(w.got)},
        {"want", Number(w.want)},
        {"error", Number(w.error)},
        {"bound", Number(w.bound != 0.0 ? w.bound : r.worst.bound)},
        {"max_abs", Number(r.worst.max_abs)},
        {"max_rel", Number(r.worst.max_rel)},
        {"outcome", r.has_worst ? nlohmann::json(std::string(Name(r.worst.outcome))) : nlohmann::json()}};
    nlohmann::json failures = nlohmann::json::array();
    for (const FailureRecord& f : r.failures) {
      failures.push_back({{"case_file", f.case_file},
                          {"report_file", f.report_file},
                          {"message", f.message},
                          {"case_index", f.case_index},
                          {"outcome", std::string(Name(f.outcome))}});
      if (!f.signature.empty()) failures.back()["signature"] = f.signature;
      if (f.repeats > 0) failures.back()["repeats"] = f.repeats;
      if (!f.shrunk_case_line.empty()) {  // shrunk before writing: both forms of the case
        failures.back()["found_case"] = f.original_case_line;
        failures.back()["shrunk_case"] = f.shrunk_case_line;
      }
    }
    nlohmann::json feature_pairs = nlohmann::json::array();
    int under_covered_pairs = 0;
    for (const FeaturePairShare& p : FeaturePairShares(r)) {
      const bool under = p.share < kUnderCoveredFeaturePair;
      under_covered_pairs += under ? 1 : 0;
      feature_pairs.push_back({{"pair", p.pair},
                               {"cases", p.cases},
                               {"share", Number(p.share)},
                               {"under_covered", under},
                               {"max_share", Number(p.count.max_share)}});
      if (!p.count.limit.empty()) feature_pairs.back()["limit"] = p.count.limit;
    }
    nlohmann::json skip_reasons = nlohmann::json::object();
    for (const auto& [reason, count] : r.skip_reasons) skip_reasons[reason] = count;
    results.push_back({{"law", r.law},
                       {"adapter", r.adapter},
                       {"cases", r.cases},
                       {"passed", r.passed},
                       {"failed", r.failed},
                       {"skipped", r.skipped},
                       {"errors", r.errors},
                       {"hazards", r.hazards},
                       {"skip_reasons", std::move(skip_reasons)},
                       {"seconds", Number(r.seconds)},
                       {"planned_cases", r.planned_cases},
                       {"stopped_by_time_budget", r.stopped_by_time_budget},
                       {"worst", std::move(worst)},
                       {"failures", std::move(failures)},
                       {"unreported_failures", r.unreported_failures},
                       {"checked", CheckedCases(r)},
                       {"coverage", Number(Coverage(r))},
                       {"under_covered", UnderCovered(r)},
                       {"nothing_checked", NothingChecked(r)},
                       {"feature_pairs", std::move(feature_pairs)},
                       {"under_covered_feature_pairs", under_covered_pairs}});
    if (r.interrupted) results.back()["interrupted"] = true;
    if (!r.ran_as.empty()) results.back()["ran_as"] = r.ran_as;
  }
  nlohmann::json json = {{"attncheck", summary.version},
                         {"seed", summary.seed},
                         {"interrupted", !summary.interrupted_by.empty()},
                         {"results", std::move(results)},
                         {"accuracy", AccuracyJson(AccuracyByAdapter(summary))},
                         {"groups", GroupsJson(GroupFailures(summary), summary)}};
  if (!summary.interrupted_by.empty()) json["signal"] = summary.interrupted_by;
  return json;
}

std::string SummaryTable(const RunSummary& summary) {
  using reports::Padded;
  constexpr size_t kShownFeaturePairs = 5;  // under-covered feature pairs listed per law × adapter
  const std::vector<std::string> header = {"law",    "adapter", "cases",    "passed",
                                           "failed", "hazards", "errors",   "skipped",
                                           "coverage", "worst error / bound", "seconds"};
  const std::vector<bool> right = {false, false, true, true, true, true, true, false, false, true, true};
  std::vector<std::vector<std::string>> rows;
  int total_cases = 0, total_passed = 0, total_failed = 0, total_errors = 0, total_skipped = 0,
      total_hazards = 0;
  for (const LawResult& r : summary.results) {
    std::string skipped = fmt::format("{}", r.skipped);
    if (r.skipped > 0) {
      skipped += fmt::format(" ({})", reports::Truncated(r.MostCommonSkipReason(), 44));
    }
    rows.push_back({r.law, r.adapter, fmt::format("{}", r.cases), fmt::format("{}", r.passed),
                    fmt::format("{}", r.failed), fmt::format("{}", r.hazards), fmt::format("{}", r.errors), skipped,
                    CoverageCell(r), reports::FormatRatioCell(r), fmt::format("{:.2f}", r.seconds)});
    total_cases += r.cases;
    total_passed += r.passed;
    total_failed += r.failed;
    total_errors += r.errors;
    total_skipped += r.skipped;
    total_hazards += r.hazards;
  }
  std::vector<size_t> widths(header.size());
  for (size_t c = 0; c < header.size(); ++c) {
    widths[c] = reports::DisplayWidth(header[c]);
    for (const auto& row : rows) widths[c] = std::max(widths[c], reports::DisplayWidth(row[c]));
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string text;
    for (size_t c = 0; c < cells.size(); ++c) {
      if (c > 0) text += "  ";
      text += Padded(cells[c], widths[c], right[c]);
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    return text + "\n";
  };
  std::string text = line(header);
  std::vector<std::string> rule;
  for (size_t width : widths) rule.push_back(std::string(width, '-'));
  text += line(rule);
  for (const auto& row : rows) text += line(row);
  text += fmt::format("{} pairs, {} cases: {} passed, {} failed, {} hazards, {} errors, {} skipped\n",
                      summary.results.size(), total_cases, total_passed, total_failed, total_hazards,
                      total_errors, total_skipped);
  if (total_hazards > 0) {
    text += fmt::format("{} hazards: behaviour the adapters' contracts allow but that is dangerous in practice "
                        "({}; see the reports)\n",
                        total_hazards,
                        summary.hazards == HazardPolicy::kFail ? "they fail the run (--hazards=fail)"
                                                               : "exit 0 unless --hazards=fail");
  }
  if (!summary.interrupted_by.empty()) {
    text += fmt::format("INTERRUPTED by {}: the counts are of the cases that ran\n", summary.interrupted_by);
  }
  for (const LawResult& r : summary.results) {
    if (UnderCovered(r)) {
      text += fmt::format("note: {} × {} {}: {}\n", r.law, r.adapter,
                          NothingChecked(r) ? "checked nothing" : "is under-covered", CoverageLine(r));
    }
    if (const std::vector<FeaturePairShare> under = UnderCoveredFeaturePairs(r); !under.empty()) {
      const auto unreachable = std::count_if(under.begin(), under.end(), [](const auto& p) { return p.unreachable(); });
      text += fmt::format("note: {} × {}: {} of {} declared feature pairs under {:.0f}% of the cases{}\n", r.law,
                          r.adapter, under.size(), r.feature_pairs.size(), 100.0 * kUnderCoveredFeaturePair,
                          unreachable > 0 ? fmt::format(" ({} of them by construction)", unreachable) : "");
      for (size_t n = 0; n < under.size() && n < kShownFeaturePairs; ++n) {
        text += "  " + FeaturePairLine(under[n], r) + "\n";
      }
      if (under.size() > kShownFeaturePairs) {
        text += fmt::format("  and {} more (summary.json lists every pair)\n", under.size() - kShownFeaturePairs);
      }
    }
    if (r.interrupted) {
      text += fmt::format("note: {} × {} interrupted after {} cases (of {})\n", r.law, r.adapter, r.cases,
                          r.planned_cases);
    }
    if (r.stopped_by_time_budget) {
      text += fmt::format("note: {} × {} stopped by time budget after {} cases (of {})\n", r.law,
                          r.adapter, r.cases, r.planned_cases);
    }
    if (r.unreported_failures > 0) {
      text += fmt::format("note: {} × {}: {} more failures not written as reports\n", r.law,
                          r.adapter, r.unreported_failures);
    }
  }
  std::vector<std::pair<std::string, std::string>> ran_as;  // once per adapter, not per law
  for (const LawResult& r : summary.results) {
    if (r.ran_as.empty() || std::find(ran_as.begin(), ran_as.end(), std::pair{r.adapter, r.ran_as}) != ran_as.end()) {
      continue;
    }
    ran_as.emplace_back(r.adapter, r.ran_as);
    text += fmt::format("note: {} ran as {}\n", r.adapter, r.ran_as);
  }
  return text + AccuracyTable(AccuracyByAdapter(summary));
}

std::string JunitXml(const RunSummary& summary) {
  using reports::XmlEscaped;
  using reports::XmlText;
  int tests = 0, failures = 0, errors = 0, skipped = 0;
  double seconds = 0.0;
  std::string cases_xml;
  for (const LawResult& r : summary.results) {
    ++tests;
    seconds += r.seconds;
    cases_xml += fmt::format("    <testcase classname=\"{}\" name=\"{}\" time=\"{:.3f}\">\n",
                             XmlEscaped(r.law), XmlEscaped(r.adapter), r.seconds);
    std::string properties;  // JUnit puts a testcase's properties first
    if (UnderCovered(r)) {
      properties += fmt::format(
          "        <property name=\"coverage\" value=\"{:.3f}\"/>\n"
          "        <property name=\"under_covered\" value=\"true\"/>\n",
          Coverage(r));
    }
    if (r.hazards > 0) properties += fmt::format("        <property name=\"hazards\" value=\"{}\"/>\n", r.hazards);
    if (!properties.empty()) cases_xml += "      <properties>\n" + properties + "      </properties>\n";
    const std::string counts =
        fmt::format("{} cases: {} passed, {} failed, {} hazards, {} errors, {} skipped{}", r.cases, r.passed,
                    r.failed, r.hazards, r.errors, r.skipped,
                    r.stopped_by_time_budget ? " (stopped by time budget)"
                    : r.interrupted          ? fmt::format(" (interrupted by {})", summary.interrupted_by)
                                             : "");
    // The first record of the kind the element reports.
    auto first = [&](Outcome kind) -> const FailureRecord* {
      for (const FailureRecord& f : r.failures) {
        if (f.outcome == kind) return &f;
      }
      return nullptr;
    };
    auto element = [&](std::string_view tag, std::string_view type, const FailureRecord* f,
                       int count) {
      const std::string message = f != nullptr ? f->message : fmt::format("{} {}", count, type);
      std::string body = counts + "\n";
      if (f != nullptr) {
        body += fmt::format("case index: {}\ncase file: {}\nreport: {}\n\n{}\n", f->case_index,
                            f->case_file, f->report_file, f->message);
      }
      cases_xml += fmt::format("      <{} message=\"{}\" type=\"{}\">{}</{}>\n", tag,
                               XmlEscaped(FirstLine(message)), type, XmlText(body), tag);
    };
    // The finding of the largest exit weight names the element (an error
    // outranks a failure, as in the exit code).
    const OutcomeInfo* shown = nullptr;
    for (const OutcomeInfo& info : AllOutcomes()) {
      const int weight = ExitWeight(info.outcome, summary.hazards);
      if (info.finding && weight > 0 && r.count(info.outcome) > 0 &&
          (!shown || weight > ExitWeight(shown->outcome, summary.hazards)))
        shown = &info;
    }
    if (shown != nullptr) {
      ++(shown->adapter_error ? errors : failures);
      // a hazard that fails the run (--hazards=fail) is a <failure type="hazard">
      const std::string_view tag = shown->junit_tag.empty() ? Info(Outcome::kFail).junit_tag : shown->junit_tag;
      element(tag, shown->junit_type, first(shown->outcome), r.count(shown->outcome));
    } else if (NothingChecked(r)) {  // never a pass
      ++skipped;
      cases_xml += fmt::format("      <skipped message=\"{}\"/>\n",
                               XmlEscaped(r.skipped > 0 ? "nothing checked: " + r.MostCommonSkipReason()
                                                      : std::string("nothing checked")));
    }
    std::string note = UnderCovered(r) ? "\nunder-covered: " + CoverageLine(r) : "";
    if (const FailureRecord* h = first(Outcome::kHazard); h != nullptr && shown == nullptr) {
      note += fmt::format("\nhazard (the contract allows it; exit 0 unless --hazards=fail): {}\nreport: {}",
                          FirstLine(h->message), h->report_file);
    }
    cases_xml += fmt::format("      <system-out>{}</system-out>\n", XmlText(counts + note));
    cases_xml += "    </testcase>\n";
  }
  std::string xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  xml += fmt::format(
      "<testsuites name=\"attncheck\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\" "
      "time=\"{:.3f}\">\n",
      tests, failures, errors, skipped, seconds);
  xml += fmt::format(
      "  <testsuite name=\"attncheck gate\" tests=\"{}\" failures=\"{}\" errors=\"{}\" "
      "skipped=\"{}\" time=\"{:.3f}\">\n",
      tests, failures, errors, skipped, seconds);
  xml += fmt::format(
      "    <properties>\n      <property name=\"attncheck\" value=\"{}\"/>\n"
      "      <property name=\"seed\" value=\"{}\"/>\n{}    </properties>\n",
      XmlEscaped(summary.version), summary.seed,
      summary.interrupted_by.empty()
          ? std::string()
          : fmt::format("      <property name=\"interrupted\" value=\"{}\"/>\n", XmlEscaped(summary.interrupted_by)));
  xml += cases_xml;
  xml += "  </testsuite>\n</testsuites>\n";
  return xml;
}

}  // namespace attncheck
