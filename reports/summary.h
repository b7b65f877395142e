// What a run found (DESIGN §7 "Each run writes summary.json and, on request,
// JUnit XML"): one LawResult per (law, adapter) pair, and the three writers of a
// whole run — the JSON summary, the terminal table and JUnit XML.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cases/features.h"

#include "properties/error_ratio.h"
#include "properties/verdict.h"
#include "reports/accuracy_profile.h"

namespace attncheck {

// One failing (or erroring) case, as written to the report folder.
struct FailureRecord {
  std::string case_file;    // <report-dir>/<law>-<hash8>/case.json
  std::string report_file;  // <report-dir>/<law>-<hash8>/report.md
  std::string message;      // the verdict's message
  uint64_t case_index = 0;  // index i of the case in the (seed, law) stream
  Outcome outcome = Outcome::kFail;  // kFail, kHazard or kError
  std::string original_case_line = {};  // when the case was shrunk: the case as found (ToLine)
  std::string shrunk_case_line = {};    // and the case written (ToLine); both empty otherwise
  std::string case_line = {};  // the case written (ToLine)
  std::string case_hash = {};  // its Hash as 16 hex digits
  // The failure's signature (properties/signature.h Signature::Key): records of one
  // signature form a group (failure_groups.h); empty for records read from older files.
  std::string signature = {};
  int repeats = 0;  // further failing checks of the same signature not written (fuzz)
  // What the index says all failures share (reports/html.cc): the case's mask
  // convention, visibility kind and dtype, and the batch row of the worst element.
  std::string mask = {}, visibility = {}, dtype = {};
  int batch_row = -1;
};

// One pair of declared features (cases/features.h) of a law × adapter pair: the
// checked cases drawn with both (a skip does not count, as for coverage, so a
// pair that is always skipped shows as under-covered: reports/coverage.h).
struct PairCount {
  int cases = 0;
  double max_share = 1.0;  // FeaturePair::max_share: the most it can reach by construction
  std::string limit;       // FeaturePair::limit: why ("" when nothing limits it)
  bool operator==(const PairCount&) const = default;
};

// The counts of one law on one adapter.
struct LawResult {
  std::string law, adapter;
  int cases = 0, passed = 0, failed = 0, skipped = 0, errors = 0, hazards = 0;
  std::map<std::string, int> skip_reasons;  // skip message → count
  double seconds = 0.0;
  // Largest error / bound ratio among failures, or among passes if none failed
  // (has_worst is false while no pass or failure has been seen).
  Verdict worst;
  bool has_worst = false;
  bool worst_is_failure = false;
  // The reported ones (the gate's first 3 per pair, each written or joining the
  // group of a case another pair wrote: reports/failure_groups.h).
  std::vector<FailureRecord> failures;
  int unreported_failures = 0;          // failures, hazards and errors beyond those
  int planned_cases = 0;                // --cases
  bool stopped_by_time_budget = false;  // ran fewer than planned_cases
  bool interrupted = false;             // stopped by Ctrl-C / SIGTERM before planned_cases
  std::string ran_as;                   // the adapter run, when not `adapter` (plugin: runs isolated:plugin:)
  AccuracyProfile accuracy;             // error / bound of its tolerance comparisons (filled by the gate)
  // Every declared feature pair ("alibi × softcap") → its count; empty when the
  // adapter declares fewer than two dimensions for the law.
  std::map<std::string, PairCount> feature_pairs;

  // Counts one verdict (pass, fail, skip, error or hazard) and updates `worst`;
  // when the verdict is checked (properties/outcome.h), each of `pairs` (the
  // declared feature pairs its case has) counts one case.
  void Add(const Verdict& v, std::span<const std::string> pairs = {});
  // Declares the feature pairs of the law × adapter pair, each at 0 cases.
  void DeclarePairs(std::span<const FeaturePair> pairs);
  // Adds another tally of the same pair (a fuzz worker's): counts, skip reasons,
  // seconds, records, accuracy, feature pair counts and the worse of the two worst verdicts.
  void Merge(const LawResult& other);
  // The verdicts counted with outcome o.
  int count(Outcome o) const;
  // The most common skip reason ("" when nothing was skipped).
  std::string MostCommonSkipReason() const;
  bool held() const { return failed == 0 && errors == 0; }
};

struct RunSummary {
  std::string version;  // the attncheck version
  uint64_t seed = 0;
  std::vector<LawResult> results;  // law-major (law-table order), adapters in the order named
  std::string interrupted_by;      // "SIGINT" / "SIGTERM" when a signal stopped the run; results: what ran
  HazardPolicy hazards = HazardPolicy::kReport;  // --hazards: a hazard is a JUnit failure under kFail
};

// {"attncheck": version, "seed": s, "results": [{"law", "adapter", "cases", "passed",
//  "failed", "skipped", "errors", "hazards", "skip_reasons", "seconds", "worst": {"b", "h", "i",
//  "j", "got", "want", "error", "bound", "max_abs", "max_rel"}, "failures":
//  [{"case_file", "report_file", "message", "case_index", "outcome"[, "found_case",
//  "shrunk_case"]}], …, "checked", "coverage", "under_covered", "nothing_checked",
//  "feature_pairs": [{"pair", "cases", "share", "under_covered", "max_share"[, "limit"]}],
//  "under_covered_feature_pairs"}]}
// (reports/coverage.h; feature pairs lowest share first), "accuracy": AccuracyJson of each adapter's profile, its
// pairs merged (reports/accuracy_profile.h).
// Non-finite numbers are written as null; "worst" is always an object (all
// indices −1 when no case passed or failed). "interrupted" (true or false) is
// always there, with "signal" when true; a result has "interrupted": true when
// it stopped early for it, and "ran_as" when it ran another adapter than named.
// "groups": the failures grouped by the case written (GroupsJson,
// reports/failure_groups.h), always there.
nlohmann::json SummaryJson(const RunSummary& summary);

// The terminal table: law × adapter with cases, passed, failed, hazards, errors, skipped
// (with the most common skip reason), worst error / bound and seconds, in
// aligned columns, with its coverage (reports/coverage.h), followed by one note per
// under-covered pair, per pair with declared feature pairs under
// kUnderCoveredFeaturePair (the lowest five listed, then "and N more") and per pair stopped by the time budget or a signal, or run
// as another adapter; then the accuracy profile's table.
std::string SummaryTable(const RunSummary& summary);

// JUnit XML: one <testcase> per law × adapter (classname = law, name = adapter),
// a <failure> (or <error>) element carrying the first message, hazards as a
// "hazards" property and a note (a <failure type="hazard"> under --hazards=fail), <skipped> when
// nothing was checked (never a pass); an under-covered pair gets "coverage" and
// "under_covered" properties and a note in its system-out.
std::string JunitXml(const RunSummary& summary);

}  // namespace attncheck
