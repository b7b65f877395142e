// The failure pipeline (DESIGN §7), one for gate, fuzz and replay: a failing
// verdict with its case and provenance is shrunk (properties/shrink_failure.h;
// optional), made a FailureReport, enriched (reports/enrich.h) and written as a
// report folder (WriteFailureReport). What each caller does differently is a
// FindingPolicy; what was written comes back as a Finding.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <mutex>
#include <set>
#include <string>

#include "adapters/adapter.h"
#include "cases/case.h"
#include "properties/laws.h"
#include "properties/verdict.h"
#include "reports/markdown.h"
#include "reports/summary.h"

namespace attncheck {

// Where a failing case came from: the run's --seed, the law's stream seed and
// the case's index in that stream (all 0 for a case read from a file).
struct Provenance {
  uint64_t seed = 0;
  uint64_t stream_seed = 0;
  uint64_t case_index = 0;
};

// The report folders of one run, shared by its pipelines (thread-safe): each
// distinct case (as shrunk) is written once, by the first pipeline that meets
// it, and at most `max_folders` folders are written in all.
class ReportLedger {
 public:
  enum class Claim { kWrite, kJoin, kOverCap };
  explicit ReportLedger(size_t max_folders) : max_folders_(max_folders) {}
  // kWrite: write the folder of `case_hash` now; kJoin: another pipeline writes
  // it; kOverCap: new, but max_folders are written already.
  Claim ClaimCase(uint64_t case_hash);

 private:
  std::mutex mutex_;
  size_t max_folders_;
  std::set<uint64_t> claimed_;
};

struct FindingPolicy {
  std::string report_dir;
  // Of the failures given to one pipeline, the first `max_reports` get a report
  // folder (later ones come back as found, unwritten) and the first `max_shrunk`
  // are shrunk when a shrink is asked for.
  size_t max_reports = std::numeric_limits<size_t>::max();
  size_t max_shrunk = std::numeric_limits<size_t>::max();
  // A failure whose case (as shrunk) this pipeline has written before: false
  // (gate) writes it as found, unshrunk, when the shrink changed it; true (fuzz)
  // writes nothing and marks the Finding a repeat.
  bool skip_repeats = false;
  // The run's ledger (gate): a case (as shrunk) another pipeline claimed first is
  // not written again but joins its group (Finding::joined); none: every pipeline
  // writes its own.
  ReportLedger* ledger = nullptr;
  // The adapter as the run made it, when that is not the name reports carry
  // (plugin:P run as isolated:plugin:P): the report folder keeps it. Empty: as named.
  std::string ran_as = {};
  // Returns true while the run stops (Ctrl-C): no new shrink and no enrichment
  // starts, and a shrink in progress ends early. Empty: never.
  std::function<bool()> should_stop = {};
};

// What the shrink did (all zero when the failure was not shrunk).
struct ShrinkStats {
  int attempts = 0;
  int accepted = 0;
  bool stopped = false;
  double seconds = 0.0;
};

struct Finding {
  FailureReport report;   // the case and verdict written (or found), with provenance
  WrittenReport written;  // written.dir is empty when no folder was written
  ShrinkStats shrink;
  bool repeat = false;  // skip_repeats: not written, its case was written before
  bool joined = false;  // ledger: not written here, its case is written by another pipeline

  // The summary's record of a written report (reports/summary.h).
  FailureRecord Record() const;
};

// The record of `report` (its case, verdict, signature and what the index
// compares), with the files of its folder when one was written.
FailureRecord RecordOf(const FailureReport& report, const WrittenReport& written = {});

// One per driver loop (a gate pair, a fuzz worker, a replay run); not thread-safe.
class FailurePipeline {
 public:
  explicit FailurePipeline(FindingPolicy policy) : policy_(std::move(policy)) {}

  // `verdict` is `law`'s failing (or erroring) verdict on `found` by `adapter`,
  // an instance of `adapter_name`. `shrink_seconds` bounds its shrink; 0 does
  // not shrink it.
  Finding Run(const Law& law, Adapter& adapter, const std::string& adapter_name, const Case& found,
              const Verdict& verdict, const Provenance& from, double shrink_seconds);

 private:
  bool Stopping() const { return policy_.should_stop && policy_.should_stop(); }
  void Shrink(const Law& law, Adapter& adapter, double seconds, Finding& finding);

  FindingPolicy policy_;
  size_t failures_ = 0;
  // law \t adapter \t hash: every case written (skip_repeats), else every shrunk case written.
  std::set<std::string> written_;
};

// "<size found> → <size written>; N attempts, K changes kept, S.SS s"
std::string ShrinkNote(const Case& found, const Case& minimal, const ShrinkStats& stats);

}  // namespace attncheck
