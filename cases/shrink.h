// The domain shrinker (DESIGN §7): greedy passes over a failing Case — drop batch
// rows, heads, tokens, documents and decode chunks, halve dims and positions,
// simplify the encoding and the data profile — keeping a change only while the
// predicate (the same law still fails) holds. It knows nothing about laws or
// adapters: properties/shrink_failure.h binds the predicate to a law.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "cases/case.h"

namespace attncheck {

struct ShrinkOptions {
  int max_attempts = 2000;       // predicate calls at most
  double max_seconds = 30.0;     // wall-clock limit; 0 = none
  // Called between attempts; returning true stops the shrink (Ctrl-C).
  std::function<bool()> should_stop;
  // When set, a candidate it rejects is skipped like an invalid one (never
  // attempted): pins what the shrink must not change, e.g. the mask convention
  // a finding is about (`attncheck shrink --keep mask`).
  std::function<bool(const Case&)> admissible;
};

struct ShrinkResult {
  Case minimal;      // the smallest case found that still fails (the input when none)
  int attempts = 0;  // predicate calls made
  int accepted = 0;  // changes kept
  bool stopped = false;  // stopped by max_attempts, max_seconds or should_stop
  int invalid = 0;       // candidates Validate or `admissible` rejected (never attempted)
  double seconds = 0.0;  // wall-clock time of the whole shrink
  std::vector<std::string> changes;  // the kept changes, in order ("rows: keep row 1", …)
};

// The size of a case in one line, for before/after messages:
// "B=2 Hq=4 Hkv=2 D=16 Dv=16 Tq=5 Tk=9 docs=3 chunks=2".
std::string SizeLine(const Case& c);

// `still_fails(candidate)` must return true when the candidate (always a valid
// Case: Validate passes) still fails the same law; it is never called on `failing`.
ShrinkResult Shrink(const Case& failing, const std::function<bool(const Case&)>& still_fails,
                    const ShrinkOptions& options = {});

}  // namespace attncheck
