// The outcomes of a check and the faults behind an error (DESIGN §6), one table
// each: a name, the exit-code weight, whether the case was checked, whether it is
// a finding (shrunk, saved, reported) and how reports classify it.
#pragma once

#include <array>
#include <cstddef>
#include <span>
#include <string_view>

#include "adapters/adapter_fault.h"

namespace attncheck {

// kHazard: the contract allows what the kernel did, but it is dangerous in
// practice (NaN spreading from masked slots where isolation is not promised, NaN
// rows where the masked-row policy is unspecified). Reported apart; exit 0 unless
// the run asks for --hazards=fail.
enum class Outcome { kPass, kFail, kSkip, kError, kHazard };
inline constexpr size_t kOutcomeCount = 5;  // rows of the table (checked in outcome.cc)

// What a hazard does to the exit code: nothing (kReport), or the weight of a
// failure (kFail, `--hazards=fail`).
enum class HazardPolicy { kReport, kFail };

struct OutcomeInfo {
  Outcome outcome;
  std::string_view name;        // "fail": JSON, the fuzz worker protocol, HTML badges
  int exit_weight;              // the program exits with the largest weight seen (DESIGN §8)
  bool checked;                 // the law was examined (a skip was not)
  bool finding;                 // shrunk, saved and reported
  bool adapter_error;           // the adapter's fault, not a law's verdict (no reruns, no maps)
  std::string_view junit_tag;   // JUnit element of a law with such a verdict ("" = none)
  std::string_view junit_type;  // its type attribute
};

std::span<const OutcomeInfo> AllOutcomes();
const OutcomeInfo& Info(Outcome);
std::string_view Name(Outcome);
// Throws std::invalid_argument for a name not in the table.
Outcome OutcomeFromName(std::string_view name);

inline int ExitWeight(Outcome o) { return Info(o).exit_weight; }
// The exit weight under a hazard policy: a hazard weighs as a failure under kFail.
int ExitWeight(Outcome o, HazardPolicy hazards);
inline bool IsFinding(Outcome o) { return Info(o).finding; }
inline bool IsAdapterError(Outcome o) { return Info(o).adapter_error; }

// How many verdicts of each outcome a run saw, and the exit code they give: the
// largest exit weight among the outcomes seen (0 when none was).
class OutcomeCounts {
 public:
  void Add(Outcome o) { ++counts_[static_cast<size_t>(o)]; }
  int operator[](Outcome o) const { return counts_[static_cast<size_t>(o)]; }
  int total() const;
  int ExitCode(HazardPolicy hazards = HazardPolicy::kReport) const;

 private:
  std::array<int, kOutcomeCount> counts_{};
};

// Why an error verdict is an error (the report's classification): the adapter
// crashed (a signal in an isolated child), hung past the time limit, threw, or
// answered garbage (wrong output size, broken protocol, guard-margin write).
enum class Fault { kNone, kCrash, kTimeout, kException, kGarbage };

std::string_view Name(Fault);
// Throws std::invalid_argument for a name not in the table.
Fault FaultFromName(std::string_view name);
// The fault of an error verdict for an adapter fault; false for kContract (a law
// failure: memory safety), which has no row.
bool FaultOf(AdapterFault adapter_fault, Fault* fault);

}  // namespace attncheck
