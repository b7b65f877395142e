// The Markdown failure report (DESIGN §7, STYLE "A failure is a story another
// person can act on"): a folder <report-dir>/<law>-<hash8>/ with the case
// (case.json, a pure Case that FromJson reads), meta.json (law, adapter, seed,
// case index: what `attncheck replay` needs besides the case) and report.md — the
// law, what it requires, the worst element, the replay command and a gtest draft.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "cases/case.h"
#include "properties/classify.h"
#include "properties/verdict.h"

namespace attncheck {

struct FailureReport {
  std::string law;      // law name as in AllLaws()
  std::string adapter;  // adapter name as MakeAdapter takes it
  // The adapter as the run made it (reports/adapter_file.h RunAs: isolated:plugin:P
  // for plugin:P); empty: `adapter` itself.
  std::string ran_as = {};
  uint64_t seed = 0;        // the run's --seed
  uint64_t stream_seed = 0;  // the seed of the law's case stream (derived from seed and law)
  uint64_t case_index = 0;  // index of the case in that stream
  Case c;
  Verdict verdict;
  // When `c` was shrunk (cases/shrink.h): the case the driver found, and one line
  // on the shrink ("37 attempts, 9 changes kept, 0.41 s"). Empty when not shrunk.
  std::optional<Case> original = {};
  std::string shrink_note = {};
  // Set by EnrichFailure (reports/enrich.h) before the report is written.
  std::optional<Classification> classification;
};

struct WrittenReport {
  std::string dir;          // <report-dir>/<law>-<hash8>[-<adapter>]
  std::string case_file;    // dir/case.json
  std::string meta_file;    // dir/meta.json
  std::string report_file;  // dir/report.md
  std::string html_file;    // dir/report.html (reports/html.h)
};

// What the law requires (DESIGN §6): the law table's requirement text; a generic
// sentence for a law not in the table.
std::string LawRequirement(std::string_view law);
// The gtest name part of a law: "non-interference" → "NonInterference".
std::string LawTestName(std::string_view law);
// The check function of a law: "non-interference" → "check_non_interference".
std::string LawCheckFunction(std::string_view law);

// {"law", "adapter", "seed", "stream_seed", "case_index", "outcome"} and, once
// classified, "classification" (deterministic | flaky | NaN | crash | timeout | …)
nlohmann::json MetaJson(const FailureReport& report);

// The report's title: "<law> failed on <adapter>", "<law>: hazard on <adapter>" or
// "<law>: adapter error on <adapter>".
std::string ReportTitle(const FailureReport& report);
// For a hazard, the paragraph that says what a hazard is (empty otherwise).
std::string HazardNote(const FailureReport& report);

// Where the law ran another case than the one given (Verdict::ran_case) or a
// decode session: that case's line and sentences on what ran (the key slots no
// query of a batch row may read, which masked-rows poisons; the decode steps).
struct RanScenario {
  std::string case_line;  // empty when the law ran the case as given
  std::vector<std::string> notes;
};
std::optional<RanScenario> DescribeRanScenario(const FailureReport& report);
// The environment variables of the run that change what it does, one
// "NAME=value (what it does)" each; "none set" when there are none.
std::string EnvironmentLine();

// The file name of the copy a report folder keeps of the file its adapter runs
// (reports/adapter_file.h: a plugin library, an exec: script); "" when it runs none.
std::string AdapterCopyName(const FailureReport& report);
// The replay commands of a report (reports/replay_command.h), naming the adapter
// as the run made it (isolated:plugin:… for a plugin the gate isolated): on this
// machine, with the file the adapter runs by its absolute path; and from inside
// the folder `dir`, with the folder's copy of that file where it keeps one.
std::string ReportReplayCommand(const FailureReport& report, std::string_view case_file);
std::string ReportFolderReplayCommand(const FailureReport& report, std::string_view dir);
// Whether the report's adapter is a kernel built outside this tree (plugin:, exec:):
// its regression test belongs in that project's corpus (attncheck_add_corpus), not ours.
bool HandsOffDownstream(const FailureReport& report);
// The "Regression test" section's text for a kernel from outside this tree:
// copy the case into the project's corpus folder and replay it with
// attncheck_add_corpus (the CMake lines), installed files only.
std::string DownstreamRegression(const FailureReport& report, std::string_view case_file);

// The report.md text; `dir` is the folder the report lives in (for the replay command).
std::string MarkdownReport(const FailureReport& report, std::string_view dir);

// Writes the folder (case.json, meta.json, report.md, report.html; atomic writes, folders created as needed) and returns its
// paths. The folder is <report-dir>/<law>-<hash8>; when it already holds a report
// of another adapter (same case failing on two adapters), <law>-<hash8>-<adapter>.
// Safe to call from several threads at once.
WrittenReport WriteFailureReport(const std::string& report_dir, const FailureReport& report);

}  // namespace attncheck
