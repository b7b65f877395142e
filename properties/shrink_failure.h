// Shrinking a failure (DESIGN §7): binds the law-agnostic shrinker (cases/shrink.h)
// to one law on one adapter. A candidate is kept only while the same law still
// gives the same outcome (fail stays fail; an error stays an error of the same
// fault class) with the same signature (properties/signature.h), so a shrunk case
// always reproduces what was found, and two findings of one bug meet. Used by
// `attncheck shrink`, by `gate` and `fuzz` before a failure is written, and for
// libFuzzer-found inputs.
#pragma once

#include <span>
#include <vector>

#include "adapters/adapter.h"
#include "cases/case.h"
#include "cases/shrink.h"
#include "properties/laws.h"
#include "properties/verdict.h"

namespace attncheck {

struct ShrunkFailure {
  ShrinkResult shrink;  // shrink.minimal is the case to write
  Verdict verdict;      // the law's verdict on shrink.minimal
};

// `verdict` is the verdict the law gave on `failing` (fail or error). The law is
// re-run on each candidate; an exception thrown by the check counts as an error
// verdict of class kException.
ShrunkFailure ShrinkFailure(const Law& law, Adapter& adapter, const Case& failing,
                            const Verdict& verdict, const Options& options,
                            const ShrinkOptions& shrink_options = {});

// The same on several adapters at once (a finding recorded against two kernels):
// a candidate is kept only while every adapter still gives its own outcome.
// `verdicts[i]` is the verdict of `adapters[i]` on `failing`; the result's
// `verdict` is the first adapter's, `verdicts` all of them.
struct ShrunkFailures {
  ShrinkResult shrink;
  std::vector<Verdict> verdicts;
};
ShrunkFailures ShrinkFailure(const Law& law, std::span<Adapter* const> adapters, const Case& failing,
                             std::span<const Verdict> verdicts, const Options& options,
                             const ShrinkOptions& shrink_options = {});

}  // namespace attncheck
