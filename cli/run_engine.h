// The run engine of `gate` and `fuzz` (DESIGN §8): one stop-signal handling, one
// progress line, one per-pair case step, one record builder, one exit code and
// adapter readiness. `gate` schedules law × adapter pairs on threads; `fuzz`
// schedules global case indices on forked workers; both call this for the rest.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "adapters/adapter.h"
#include "cases/capabilities.h"
#include "cases/case.h"
#include "cases/features.h"
#include "cli/shape_limits.h"
#include "properties/laws.h"
#include "properties/verdict.h"
#include "reports/finding.h"
#include "reports/summary.h"

namespace attncheck::cli {

// A steady-clock duration in seconds (progress lines, summaries).
inline double Seconds(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }

// ---- Ctrl-C and SIGTERM: stop handing out cases, finish the current one ----

// What a second stop signal does: kKills (the gate) resets the handler on the
// first (SA_RESETHAND), so a second Ctrl-C kills the process at once; kIsCaught
// (the fuzz parent, which must reap its workers) keeps catching.
enum class SecondStop { kKills, kIsCaught };

// Catches SIGINT and SIGTERM while it lives (the signal is recorded, Stopping()
// turns true), without SA_RESTART so a blocking poll() returns EINTR at once;
// restores the default actions when destroyed. A forked child inherits them.
class StopSignals {
 public:
  explicit StopSignals(SecondStop second);
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;
};

// True once a stop signal arrived (since the last StopSignals was made).
bool Stopping();
// The stop signal received; 0 while none. Kept after StopSignals is destroyed.
int StopSignal();
// "SIGINT" or "SIGTERM" (summary.json's interrupted_by); "" for 0.
std::string StopSignalName(int signal);

// ---- the progress line ----

// What the line shows: "[label] cases[/planned] cases  R cases/s  F failures[  K findings][tail]".
struct ProgressCounts {
  std::string label;       // "law × adapter", "fuzz"
  int64_t cases = 0;
  int64_t planned = -1;    // -1: no plan
  double seconds = 0.0;    // for the rate
  int64_t failures = 0;
  int64_t findings = -1;   // -1: not shown
  std::string tail;        // "  (2/6 pairs done)", "  12.3 s  (stopping)"
};

// The single updating line on stderr ("\r…\033[K"), shown on a terminal unless
// quiet, at most every 100 ms unless forced. Thread-safe.
class ProgressLine {
 public:
  explicit ProgressLine(bool quiet);
  // `counts` is called only when the line is drawn.
  void Show(const std::function<ProgressCounts()>& counts, bool force = false);
  // The same line with text of its own ("[list] 3/128 adapters made").
  void ShowText(const std::function<std::string()>& text, bool force = false);
  // Erases the line, if one is shown (before other output).
  void Clear();

 private:
  bool enabled_;
  bool shown_ = false;
  std::mutex mutex_;
  std::chrono::steady_clock::time_point last_{};
};

// ---- adapter readiness ----

// Every adapter of a run, made (and through its handshake) before the run touches
// the report folder (DESIGN §8), so a run that cannot start leaves the previous
// run's reports as they were. The gate takes each for the first pair that runs it
// (later pairs make their own); fuzz releases them all before forking its workers.
class ReadyAdapters {
 public:
  explicit ReadyAdapters(const std::vector<std::string>& names);
  // The adapter made for `name`, or a new instance once that one is taken. Thread-safe.
  std::unique_ptr<Adapter> Take(const std::string& name);
  // Ends every adapter not taken (process adapters exit): nothing live is forked.
  void Release();

 private:
  std::mutex mutex_;
  std::map<std::string, std::unique_ptr<Adapter>> made_;
};

// ---- one law × adapter pair ----

// A case checked by PairRunner::Check: its provenance, the case (empty when the
// pair has nothing to draw) and the verdict.
struct CheckedCase {
  Provenance from;
  Case c;
  Verdict verdict;
};

// The state of one law × adapter pair in one process: its adapter instance, the
// capabilities narrowed by --max-* and the law's needs (or why nothing can be
// drawn), its case stream and its tally. The stream steers a share of its cases
// toward each pair of the features those capabilities declare (cases/features.h
// SteeredPair), from the case index alone: gate and fuzz draw the same case i.
class PairRunner {
 public:
  // Called with each decoded case before the adapter runs it (in-flight.json, --trace).
  using BeforeRun = std::function<void(const Case& c, uint64_t index)>;

  // Whether the tally keeps the accuracy profile (reports/accuracy_profile.h):
  // the gate's summary shows it; a fuzz worker sends counts only, and a long
  // campaign would grow it without bound.
  enum class Accuracy { kProfile, kNone };

  // `adapter` is this pair's instance (gate) or shared by the pairs of one adapter (a fuzz worker).
  PairRunner(const Law& law, std::shared_ptr<Adapter> adapter, std::string adapter_name, uint64_t seed,
             Accuracy accuracy, const ShapeLimits& limits = {});

  // Case `index` of the law's stream, decoded under the narrowed capabilities
  // (steered or not: SteeredPair), run and tallied (counts, worst, check seconds,
  // the feature pairs of a checked case, accuracy if kept). A pair with nothing to
  // draw tallies one skip, at index 0 only, and runs nothing.
  CheckedCase Check(uint64_t index, const BeforeRun& before = {});

  bool can_draw() const { return caps_.has_value(); }
  const Law& law() const { return *law_; }
  Adapter& adapter() { return *adapter_; }
  const std::string& adapter_name() const { return tally_.adapter; }
  LawResult& tally() { return tally_; }

 private:
  const Law* law_;
  std::shared_ptr<Adapter> adapter_;
  uint64_t seed_;
  uint64_t stream_seed_;
  Accuracy accuracy_;
  std::string no_draw_;  // why caps_ is empty (set while caps_ is initialised, so declared first)
  std::optional<Capabilities> caps_;
  FeatureSteering steering_;  // toward the feature pairs caps_ declare for the law
  LawResult tally_;
};

// ---- the record builder ----

// What one finding adds to a run: the summary's record (when a report folder
// holds it, written here or by the pair it joined) and its findings.jsonl line,
// whose replay command runs `replay_file` (default: the folder's case.json; a
// finding with neither logs no replay).
// A caller adds its own fields to the line.
struct FindingEntry {
  std::optional<FailureRecord> record;
  nlohmann::json line;
};
FindingEntry EntryOf(const Finding& finding, std::string_view replay_file = {});

// ---- the exit code ----

struct RunEnd {
  int failed = 0, errors = 0, hazards = 0;  // verdicts (gate) or distinct findings (fuzz)
  HazardPolicy policy = HazardPolicy::kReport;
  bool under_covered = false;  // a pair below --min-coverage: fails the run
  int worker_faults = 0;       // a worker that died or failed: counted as errors
  bool fatal_input = false;    // a worker stopped on bad input: exit 2 when nothing was found
  int stop_signal = 0;         // the run was stopped by this signal: 128 + signal
};
// 128 + stop_signal; else 2 on a fatal input with nothing found; else the largest
// exit weight of what was seen (cli/commands.h ExitCode), 1 when under-covered.
int RunExitCode(const RunEnd& end);

}  // namespace attncheck::cli
