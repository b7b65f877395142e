// The failure pipeline (finding.h): shrink → FailureReport → enrich → report
// folder, with the per-caller limits of FindingPolicy.
#include "reports/finding.h"

#include <fmt/format.h>

#include "cases/case_json.h"
#include "cases/shrink.h"
#include "properties/shrink_failure.h"
#include "reports/enrich.h"

namespace attncheck {
namespace {

std::string WrittenKey(const FailureReport& report) {
  return fmt::format("{}\t{}\t{:016x}", report.law, report.adapter, Hash(report.c));
}

}  // namespace

std::string ShrinkNote(const Case& found, const Case& minimal, const ShrinkStats& stats) {
  return fmt::format("{} → {}; {} attempts, {} changes kept, {:.2f} s", SizeLine(found), SizeLine(minimal),
                     stats.attempts, stats.accepted, stats.seconds);
}

ReportLedger::Claim ReportLedger::ClaimCase(uint64_t case_hash) {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (claimed_.contains(case_hash)) return Claim::kJoin;
  if (claimed_.size() >= max_folders_) return Claim::kOverCap;
  claimed_.insert(case_hash);
  return Claim::kWrite;
}

FailureRecord RecordOf(const FailureReport& report, const WrittenReport& written) {
  FailureRecord record;
  record.case_file = written.case_file;
  record.report_file = written.report_file;
  record.message = report.verdict.message;
  record.case_index = report.case_index;
  record.outcome = report.verdict.outcome;
  record.case_line = ToLine(report.c);
  record.case_hash = fmt::format("{:016x}", Hash(report.c));
  if (report.original) {
    record.original_case_line = ToLine(*report.original);
    record.shrunk_case_line = ToLine(report.c);
  }
  record.signature = SignatureOf(report.law, report.c, report.verdict).Key();
  record.mask = std::string(Name(report.verdict.mask ? *report.verdict.mask : report.c.mask));
  record.visibility = std::string(Name(report.c.visibility));
  record.dtype = std::string(Name(report.c.dtype));
  record.batch_row = report.verdict.worst.b;
  return record;
}

FailureRecord Finding::Record() const { return RecordOf(report, written); }

Finding FailurePipeline::Run(const Law& law, Adapter& adapter, const std::string& adapter_name, const Case& found,
                             const Verdict& verdict, const Provenance& from, double shrink_seconds) {
  Finding finding;
  FailureReport& report = finding.report;
  report.law = std::string(law.name);
  report.adapter = adapter_name;
  report.ran_as = policy_.ran_as.empty() ? adapter_name : policy_.ran_as;
  report.seed = from.seed;
  report.stream_seed = from.stream_seed;
  report.case_index = from.case_index;
  report.c = found;
  report.verdict = verdict;
  const size_t index = failures_++;
  if (index >= policy_.max_reports) return finding;
  if (shrink_seconds > 0.0 && index < policy_.max_shrunk && !Stopping()) {
    Shrink(law, adapter, shrink_seconds, finding);
  }
  if (policy_.ledger != nullptr) {
    const ReportLedger::Claim claim = policy_.ledger->ClaimCase(Hash(report.c));
    if (claim == ReportLedger::Claim::kOverCap) return finding;
    finding.joined = claim == ReportLedger::Claim::kJoin;
    if (finding.joined) return finding;
  }
  if (policy_.skip_repeats && !written_.insert(WrittenKey(report)).second) {
    finding.repeat = true;
    return finding;
  }
  if (!Stopping()) EnrichFailure(report, adapter, law);  // influence map, row error, rerun classification
  finding.written = WriteFailureReport(policy_.report_dir, report);
  return finding;
}

void FailurePipeline::Shrink(const Law& law, Adapter& adapter, double seconds, Finding& finding) {
  FailureReport& report = finding.report;
  ShrinkOptions limits;
  limits.max_seconds = seconds;
  limits.should_stop = policy_.should_stop;
  ShrunkFailure shrunk = ShrinkFailure(law, adapter, report.c, report.verdict, Options{}, limits);
  finding.shrink = {shrunk.shrink.attempts, shrunk.shrink.accepted, shrunk.shrink.stopped, shrunk.shrink.seconds};
  if (shrunk.shrink.accepted == 0) return;  // the case found is minimal already
  const Case found = report.c;
  report.c = std::move(shrunk.shrink.minimal);
  // Without skip_repeats or a ledger, two failures that shrink to one minimal case
  // share one report: the second is written as found instead of overwriting the first.
  if (!policy_.skip_repeats && policy_.ledger == nullptr && !written_.insert(WrittenKey(report)).second) {
    report.c = found;
    return;
  }
  report.original = found;
  report.verdict = std::move(shrunk.verdict);
  report.shrink_note = ShrinkNote(found, report.c, finding.shrink);
}

}  // namespace attncheck
