// `attncheck gate`: the CI gate. For each (law, adapter) pair, N cases drawn by
// Decode(RandomSource(LawStreamSeed(seed, law), i), adapter capabilities narrowed
// by --max-* and the law's needs, three in four steered toward a pair of declared
// features: cases/features.h; a pair with nothing to draw is one skip) are
// checked; the first 3 failures per pair (1 hazard) are shrunk (cases/shrink.h) and written up as report folders, one per distinct case as
// shrunk (a case that breaks several pairs is one group, reports/failure_groups.h),
// at most --max-reports in all; the run ends with a table,
// summary.json (and --json / --junit) and an exit code: 0 every law held, 1 a law
// failed or a pair's coverage (reports/coverage.h) is below --min-coverage (declared
// feature pairs under 2% of the cases are reported, never failed), 3 an
// adapter errored (3 wins over 1); hazards (properties/outcome.h) exit 0 unless
// --hazards=fail; Ctrl-C / SIGTERM stop it early with everything
// written for what ran, and exit 130 / 143. The gate schedules pairs on threads
// over the run engine (cli/run_engine.h) it shares with `fuzz`.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <memory>
#include <mutex>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "adapters/registry.h"
#include "cases/case_json.h"
#include "cases/error.h"
#include "cli/commands.h"
#include "cli/run_engine.h"
#include "cli/shape_limits.h"
#include "reports/adapter_file.h"
#include "reports/coverage.h"
#include "reports/failure_groups.h"
#include "cli/in_flight.h"
#include "reports/finding.h"
#include "reports/findings_log.h"
#include "reports/replay_command.h"
#include "reports/run_manifest.h"
#include "reports/run_outputs.h"
#include "reports/summary.h"

namespace attncheck::cli {
namespace {

using Clock = std::chrono::steady_clock;

// Failures per (law, adapter) pair shrunk (cases/shrink.h) and reported; later
// ones are only counted.
constexpr size_t kMaxReportsPerPair = 3;
// The same for hazards (reported apart; a pair may have hundreds).
constexpr size_t kMaxHazardReportsPerPair = 1;

struct GateOptions {
  std::vector<std::string> adapters;
  std::vector<std::string> laws;
  std::vector<std::string> skip_laws;  // --skip-law
  ShapeLimits limits;                  // --max-*
  int cases = 200;
  uint64_t seed = 1;
  double time_budget = 0.0;  // seconds for the whole run; 0 = none
  int jobs = 1;
  std::string report_dir = "attncheck-report";
  size_t max_reports = 100;  // report folders (distinct cases) of the whole run
  std::string json;
  std::string junit;
  bool quiet = false;
  double shrink_seconds = 5.0;  // per shrunk failure
  bool no_shrink = false;
  double min_coverage = 0.0;  // checked / planned below it fails the gate; 0 = off
  bool in_process = false;  // load plugin: adapters into the gate (default: isolated:plugin:)
  HazardPolicy hazards = HazardPolicy::kReport;  // --hazards
};

struct Pair {
  const Law* law;
  std::string adapter;  // as the user named it
  std::string run_as;   // the adapter made: plugin:P runs as isolated:plugin:P unless --in-process
};

// What the pairs of a run share while they run.
struct RunState {
  ProgressLine& progress;
  size_t pairs;
  std::atomic<size_t> pairs_done{0};
  FindingsLog& findings;
  InFlightFile& in_flight;
  ReportLedger& ledger;
  ReadyAdapters& ready;
};

// Pair `slot` (the index in the run); in-flight.json gets each case before it
// runs when the adapter is in-process.
LawResult RunPair(size_t slot, const Pair& pair, const GateOptions& options, double budget_share, RunState& run) {
  const Clock::time_point start = Clock::now();
  PairRunner runner(*pair.law, run.ready.Take(pair.run_as), pair.adapter, options.seed,
                    PairRunner::Accuracy::kProfile, options.limits);
  LawResult& result = runner.tally();
  if (pair.run_as != pair.adapter) result.ran_as = pair.run_as;
  result.planned_cases = options.cases;
  PairRunner::BeforeRun before;
  if (RunsInProcess(pair.run_as)) {
    before = [&](const Case& c, uint64_t i) { run.in_flight.Record(slot, pair.law->name, pair.adapter, c, i); };
  }
  const auto show_progress = [&](bool force) {
    run.progress.Show(
        [&] {
          return ProgressCounts{.label = fmt::format("{} × {}", result.law, result.adapter),
                                .cases = result.cases,
                                .planned = options.cases,
                                .seconds = Seconds(Clock::now() - start),
                                .failures = result.failed + result.errors,
                                .tail = run.pairs > 1 ? fmt::format("  ({}/{} pairs done)", run.pairs_done.load(),
                                                                    run.pairs)
                                                      : ""};
        },
        force);
  };
  FailurePipeline pipeline({.report_dir = options.report_dir,
                            .max_reports = kMaxReportsPerPair,
                            .max_shrunk = kMaxReportsPerPair,
                            .ledger = &run.ledger,
                            .ran_as = pair.run_as,
                            .should_stop = Stopping});
  // Hazards get their own, smaller allowance: they never take a failure's report.
  FailurePipeline hazard_pipeline({.report_dir = options.report_dir,
                                   .max_reports = kMaxHazardReportsPerPair,
                                   .max_shrunk = kMaxHazardReportsPerPair,
                                   .ledger = &run.ledger,
                                   .ran_as = pair.run_as,
                                   .should_stop = Stopping});
  if (!runner.can_draw()) runner.Check(0);  // tallied as one skip
  for (int i = 0; runner.can_draw() && i < options.cases; ++i) {
    if (budget_share > 0.0 && Seconds(Clock::now() - start) >= budget_share) {
      result.stopped_by_time_budget = true;
      break;
    }
    if (Stopping()) {
      result.interrupted = true;
      break;
    }
    const CheckedCase checked = runner.Check(static_cast<uint64_t>(i), before);
    if (IsFinding(checked.verdict.outcome)) {
      // Shrinking spends the pair's time budget too: never past its share.
      const double budget_left =
          budget_share > 0.0 ? budget_share - Seconds(Clock::now() - start) : options.shrink_seconds;
      const double shrink_seconds = options.no_shrink ? 0.0 : std::min(options.shrink_seconds, budget_left);
      // The first kMaxReportsPerPair are shrunk and written, or join the group of their case.
      const Finding finding = (checked.verdict.hazard() ? hazard_pipeline : pipeline)
                                  .Run(*pair.law, runner.adapter(), pair.adapter, checked.c, checked.verdict,
                                       checked.from, shrink_seconds);
      const FindingEntry entry = EntryOf(finding);
      if (entry.record) {
        result.failures.push_back(*entry.record);
      } else {
        ++result.unreported_failures;
      }
      run.findings.Append(entry.line);
    }
    show_progress(false);
  }
  run.in_flight.Clear(slot);
  result.seconds = Seconds(Clock::now() - start);
  show_progress(true);
  ++run.pairs_done;
  return std::move(result);
}

// Runs every pair, `workers` pairs at a time (each on its own thread and adapter
// instance); the first exception of any pair is rethrown once all have stopped.
// After a stop signal no pair starts: the results are those of the pairs that ran.
std::vector<LawResult> RunPairs(const std::vector<Pair>& pairs, size_t workers, const GateOptions& options,
                                double budget_share, FindingsLog& findings, ReadyAdapters& ready) {
  ProgressLine progress(options.quiet);
  InFlightFile in_flight(options.report_dir);  // removed on return, thrown or not
  ReportLedger ledger(options.max_reports);
  RunState run{.progress = progress, .pairs = pairs.size(), .findings = findings, .in_flight = in_flight,
               .ledger = ledger, .ready = ready};
  std::vector<LawResult> results(pairs.size());
  std::vector<char> started(pairs.size(), 0);
  std::atomic<size_t> next{0};
  std::mutex error_mutex;
  std::exception_ptr first_error;
  auto work = [&] {
    for (size_t n = next++; n < pairs.size() && !Stopping(); n = next++) {
      started[n] = 1;
      try {
        results[n] = RunPair(n, pairs[n], options, budget_share, run);
      } catch (...) {
        const std::lock_guard<std::mutex> lock(error_mutex);
        if (!first_error) first_error = std::current_exception();
        next = pairs.size();  // stop handing out pairs
      }
    }
  };
  if (workers == 1) {
    work();
  } else {
    std::vector<std::thread> threads;
    for (size_t t = 0; t < workers; ++t) threads.emplace_back(work);
    for (std::thread& thread : threads) thread.join();
  }
  progress.Clear();
  if (first_error) std::rethrow_exception(first_error);
  std::vector<LawResult> ran;
  for (size_t n = 0; n < pairs.size(); ++n) {
    if (started[n]) ran.push_back(std::move(results[n]));
  }
  LinkGroupFiles(ran);
  return ran;
}

// What this run wrote into the report folder (run.json, reports/run_manifest.h).
RunManifest OwnedEntries(const std::string& report_dir, const RunSummary& summary) {
  RunManifest manifest{.failure_folders = {}, .files = {"summary.json", "index.html"}};
  for (const LawResult& r : summary.results) {
    for (const FailureRecord& f : r.failures) {
      manifest.failure_folders.push_back(std::filesystem::path(f.case_file).parent_path().filename().string());
    }
  }
  for (const char* file : {"findings.jsonl", "in-flight.json"}) {
    if (std::filesystem::exists(std::filesystem::path(report_dir) / file)) manifest.files.push_back(file);
  }
  return manifest;
}

// The table (unless --quiet) and a paragraph per pair that did not hold; what the exit code counts.
RunEnd PrintResults(const GateOptions& options, const RunSummary& summary) {
  RunEnd end{.policy = options.hazards};
  if (!options.quiet) fmt::print("{}", SummaryTable(summary));
  for (const LawResult& r : summary.results) {
    end.failed += r.failed;
    end.errors += r.errors;
    end.hazards += r.hazards;
    if (r.held() && r.hazards == 0) continue;
    if (r.held()) {
      fmt::print("HAZARD {} × {}: {} hazards of {} cases (the contract allows it)\n", r.law, r.adapter, r.hazards,
                 r.cases);
    } else {
      fmt::print("{} {} × {}: {} failed, {} errors of {} cases\n", r.errors > 0 ? "ERROR" : "FAIL", r.law,
                 r.adapter, r.failed, r.errors, r.cases);
    }
    if (!r.failures.empty()) {
      const Outcome shown = r.held() ? Outcome::kHazard : r.errors > 0 ? Outcome::kError : Outcome::kFail;
      const auto it = std::find_if(r.failures.begin(), r.failures.end(),
                                   [&](const FailureRecord& f) { return f.outcome == shown; });
      const FailureRecord& f = it != r.failures.end() ? *it : r.failures.front();
      fmt::print("  {}\n", FirstLine(f.message));
      if (!f.shrunk_case_line.empty()) {
        fmt::print("  found:  {}\n  shrunk: {}\n", f.original_case_line, f.shrunk_case_line);
      }
      fmt::print("  report: {}\n  replay: {}\n", f.report_file,
                 ReplayCommand(f.case_file, WithAbsoluteAdapterFile(r.ran_as.empty() ? r.adapter : r.ran_as), r.law));
    }
  }
  const std::vector<const LawResult*> below = BelowCoverage(summary, options.min_coverage);
  for (const LawResult* r : below) {
    fmt::print("UNDER-COVERED {} × {}: {} (--min-coverage {})\n", r->law, r->adapter, CoverageLine(*r),
               options.min_coverage);
  }
  if (!options.quiet) fmt::print("summary: {}\n", (std::filesystem::path(options.report_dir) / "summary.json").string());
  std::vector<std::string> unchecked;
  for (const LawResult& r : summary.results)
    if (NothingChecked(r)) unchecked.push_back(fmt::format("{} × {}", r.law, r.adapter));
  if (!unchecked.empty()) {  // never a silent pass: the last line says so, even with --quiet
    fmt::print("{} of {} pairs checked nothing: {}\n", unchecked.size(), summary.results.size(),
               fmt::join(unchecked, ", "));
  }
  std::fflush(stdout);
  end.under_covered = !below.empty();
  return end;
}

int RunGate(const GateOptions& options) {
  if (options.cases == 0) throw InputError::Option("--cases", "0 cases check nothing; give at least 1");
  if (!(options.min_coverage >= 0.0 && options.min_coverage <= 1.0)) {
    throw InputError::Option("--min-coverage", fmt::format("expected a fraction from 0 to 1, got {}", options.min_coverage));
  }
  const std::vector<const Law*> laws = ResolveLaws(options.laws, options.skip_laws);
  const std::vector<std::string> adapters = ResolveAdapters(options.adapters);
  std::vector<Pair> pairs;
  for (const Law* law : laws) {
    for (const std::string& adapter : adapters) pairs.push_back({law, adapter, RunAs(adapter, options.in_process)});
  }
  std::vector<std::string> run_as;
  for (const Pair& pair : pairs) run_as.push_back(pair.run_as);
  ReadyAdapters ready(run_as);  // before anything in the report folder is touched
  {
    std::error_code error;
    std::filesystem::create_directories(options.report_dir, error);
    if (error) throw InputError(options.report_dir, "", "cannot create report folder: " + error.message());
  }
  for (const std::string& line : ClearPreviousRun(options.report_dir)) fmt::print(stderr, "{}\n", line);
  WriteRunManifest(options.report_dir, {.failure_folders = {}, .files = {"findings.jsonl", "in-flight.json"}});  // until the end

  const size_t workers = std::max<size_t>(1, std::min<size_t>(static_cast<size_t>(options.jobs), pairs.size()));
  // Pairs run `workers` at a time, so each gets that share of the wall-clock budget.
  const double budget_share =
      options.time_budget > 0.0 && !pairs.empty()
          ? options.time_budget * static_cast<double>(workers) / static_cast<double>(pairs.size())
          : 0.0;
  FindingsLog findings(options.report_dir);  // opened at the first finding

  RunSummary summary;
  summary.version = std::string(Version());
  summary.seed = options.seed;
  summary.hazards = options.hazards;
  {
    const StopSignals signals(SecondStop::kKills);
    summary.results = RunPairs(pairs, workers, options, budget_share, findings, ready);
  }
  summary.interrupted_by = StopSignalName(StopSignal());
  WriteRunOutputs({options.report_dir, options.json, options.junit}, summary);
  WriteRunManifest(options.report_dir, OwnedEntries(options.report_dir, summary));
  RunEnd end = PrintResults(options, summary);
  end.stop_signal = StopSignal();
  if (end.stop_signal == 0) return RunExitCode(end);
  int cases = 0;
  for (const LawResult& r : summary.results) cases += r.cases;
  fmt::print(stderr, "attncheck: gate interrupted by {} after {} cases; summary, reports and index.html of what ran "
             "are in {}\n", summary.interrupted_by, cases, options.report_dir);
  return RunExitCode(end);
}

}  // namespace

Command AddGateCommand(CLI::App& program) {
  auto options = std::make_shared<GateOptions>();
  CLI::App* app = program.add_subcommand(
      "gate", "Check every law on every adapter over N generated cases (the CI gate); exit 0 when all hold");
  app->add_option("--adapter,-a", options->adapters,
                  "Adapter to check, or a pattern with * (repeatable; default: every correct adapter, "
                  "see `attncheck list`)")
      ->allow_extra_args(false);
  app->add_option("--law,-l", options->laws, "Law to check, or a pattern with * (repeatable; default: every law)")
      ->allow_extra_args(false);
  app->add_option("--cases,-n", options->cases,
                  "Cases per law × adapter pair (fuzz --cases counts cases over all laws together: "
                  "gate --cases N over L laws checks what fuzz --cases N·L does)")
      ->capture_default_str()
      ->check(IntIn(0, 1000000000));
  app->add_option("--skip-law", options->skip_laws, "Law not to check, or a pattern with * (repeatable)")
      ->allow_extra_args(false);
  app->add_option("--seed,-s", options->seed, "Seed of the case streams (case i of a seed is the same everywhere)")
      ->capture_default_str()
      ->check(Seed());
  AddShapeLimitOptions(*app, options->limits);
  app->add_option("--time-budget,--time", options->time_budget,
                  "Wall-clock seconds for the whole run; each law × adapter pair stops once its share is used "
                  "(--time is the same option, as in fuzz)")
      ->check(PositiveSeconds());
  app->add_option("--jobs,-j", options->jobs, "Law × adapter pairs run in parallel (own adapter instances each)")
      ->capture_default_str()
      ->check(IntIn(1, 1024));
  app->add_option("--report-dir", options->report_dir,
                  "Folder for summary.json, index.html, findings.jsonl and one <law>-<hash8>/ report per distinct "
                  "failing case; run.json lists what the run wrote, which the next run into the folder removes first")
      ->capture_default_str();
  app->add_option("--max-reports", options->max_reports,
                  "Report folders written in all: the first 3 failures (1 hazard) of each law × adapter pair are "
                  "shrunk, and each distinct case written once, naming every pair it breaks; later ones are counted")
      ->capture_default_str()
      ->check(IntIn(0, 1000000));
  app->add_option("--json", options->json, "Also write the JSON summary to this file");
  app->add_option("--junit", options->junit, "Write JUnit XML (one testcase per law × adapter) to this file");
  app->add_flag("--quiet,-q", options->quiet, "No progress line and no table; only failures are printed");
  app->add_option("--shrink-seconds", options->shrink_seconds,
                  "Seconds to shrink each of the first 3 failures (1 hazard) of a law × adapter pair before its report")
      ->capture_default_str()
      ->check(PositiveSeconds());
  app->add_flag("--no-shrink", options->no_shrink, "Write failures as found, without shrinking them");
  app->add_option("--min-coverage", options->min_coverage,
                  "Fail (exit 1) when a law × adapter pair checked fewer than this fraction of its planned cases "
                  "(skips are not checked; 0 = off)")
      ->capture_default_str();
  AddHazardsOption(app, &options->hazards);
  app->add_flag("--in-process", options->in_process,
                "Load plugin:PATH adapters into the gate itself (faster; a crash then kills the run, leaving "
                "<report-dir>/in-flight.json). Default: plugin:PATH runs as isolated:plugin:PATH");
  return {app, [options] { return RunGate(*options); }};
}

}  // namespace attncheck::cli
