// The outcome and fault tables: every other file reads them.
#include "properties/outcome.h"

#include <algorithm>
#include <array>
#include <stdexcept>
#include <string>

namespace attncheck {
namespace {

constexpr std::array kOutcomes = {
    OutcomeInfo{Outcome::kPass, "pass", 0, true, false, false, "", ""},
    OutcomeInfo{Outcome::kFail, "fail", 1, true, true, false, "failure", "law-failed"},
    OutcomeInfo{Outcome::kSkip, "skip", 0, false, false, false, "skipped", ""},
    OutcomeInfo{Outcome::kError, "error", 3, true, true, true, "error", "adapter-error"},
    // JUnit has no hazard element: a property and a note (a <failure> under --hazards=fail)
    OutcomeInfo{Outcome::kHazard, "hazard", 0, true, true, false, "", "hazard"},
};

constexpr bool OutcomesInEnumOrder() {
  for (size_t i = 0; i < kOutcomes.size(); ++i)
    if (kOutcomes[i].outcome != static_cast<Outcome>(i)) return false;
  return true;
}
static_assert(OutcomesInEnumOrder(), "kOutcomes is indexed by Outcome");
static_assert(kOutcomes.size() == kOutcomeCount, "kOutcomeCount counts the rows of kOutcomes");

struct FaultRow {
  Fault fault;
  AdapterFault adapter_fault;
  std::string_view name;
};

constexpr std::array kFaults = {
    FaultRow{Fault::kNone, AdapterFault::kNone, "none"},
    FaultRow{Fault::kCrash, AdapterFault::kCrash, "crash"},
    FaultRow{Fault::kTimeout, AdapterFault::kTimeout, "timeout"},
    FaultRow{Fault::kException, AdapterFault::kException, "exception"},
    FaultRow{Fault::kGarbage, AdapterFault::kGarbage, "garbage"},
};

constexpr bool FaultsInEnumOrder() {
  for (size_t i = 0; i < kFaults.size(); ++i)
    if (kFaults[i].fault != static_cast<Fault>(i)) return false;
  return true;
}
static_assert(FaultsInEnumOrder(), "kFaults is indexed by Fault");

}  // namespace

std::span<const OutcomeInfo> AllOutcomes() { return kOutcomes; }

const OutcomeInfo& Info(Outcome o) { return kOutcomes[static_cast<size_t>(o)]; }

std::string_view Name(Outcome o) { return Info(o).name; }

int OutcomeCounts::total() const {
  int n = 0;
  for (int count : counts_) n += count;
  return n;
}

int ExitWeight(Outcome o, HazardPolicy hazards) {
  if (o == Outcome::kHazard && hazards == HazardPolicy::kFail) return ExitWeight(Outcome::kFail);
  return ExitWeight(o);
}

int OutcomeCounts::ExitCode(HazardPolicy hazards) const {
  int code = 0;
  for (const OutcomeInfo& info : kOutcomes)
    if ((*this)[info.outcome] > 0) code = std::max(code, ExitWeight(info.outcome, hazards));
  return code;
}

Outcome OutcomeFromName(std::string_view name) {
  for (const OutcomeInfo& info : kOutcomes)
    if (info.name == name) return info.outcome;
  throw std::invalid_argument("unknown outcome '" + std::string(name) + "'");
}

std::string_view Name(Fault f) { return kFaults[static_cast<size_t>(f)].name; }

Fault FaultFromName(std::string_view name) {
  for (const FaultRow& row : kFaults)
    if (row.name == name) return row.fault;
  throw std::invalid_argument("unknown fault '" + std::string(name) + "'");
}

bool FaultOf(AdapterFault adapter_fault, Fault* fault) {
  for (const FaultRow& row : kFaults)
    if (row.adapter_fault == adapter_fault && row.fault != Fault::kNone) {
      *fault = row.fault;
      return true;
    }
  return false;
}

}  // namespace attncheck
