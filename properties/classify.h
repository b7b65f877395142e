// The rerun classification of a failure (DESIGN §7): run the same check again
// and say what kind of failure it is — deterministic (the same numbers every
// time), flaky (the reruns disagree), NaN (the adapter's output holds a NaN
// where a real row expects a number), or, for error verdicts, crash / timeout /
// exception / garbage from Verdict::fault.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "adapters/adapter.h"
#include "cases/case.h"
#include "properties/verdict.h"

namespace attncheck {

enum class FailureKind { kDeterministic, kFlaky, kNaN, kCrash, kTimeout, kException, kGarbage };
std::string_view Name(FailureKind);

struct Classification {
  FailureKind kind = FailureKind::kDeterministic;
  int reruns = 0;      // checks run again
  int reproduced = 0;  // reruns whose verdict matched the first bitwise (outcome, worst element, max abs)
  bool nan_output = false;  // a real, non-empty row of the adapter's output holds a NaN
  std::string detail;       // one sentence for the report
};

// Verdicts equal in outcome, worst element (indices and the bits of got, want,
// error, bound) and max abs.
bool SameVerdict(const Verdict& a, const Verdict& b);

// Whether the adapter's attention output for the case holds a NaN in a real query
// row with at least one visible key (rows with no visible key may be NaN by the
// adapter's declared policy). False when the case cannot run.
bool AttentionOutputHasNaN(Adapter& adapter, const Case& c);

// Classifies `first` (a failing or error verdict): error verdicts by their fault;
// otherwise `rerun` is called `reruns` times and the results compared with
// `first` (flaky when any differs), and the adapter's output is checked for NaN
// (NaN wins over deterministic, flaky wins over NaN). `adapter` may be null (no
// NaN check).
Classification ClassifyFailure(const Verdict& first, const std::function<Verdict()>& rerun, int reruns,
                               Adapter* adapter, const Case& c);

}  // namespace attncheck
