// For the tests of real-library adapters (ggml, libtorch): run one law over a
// short stream of decoded cases and expect it to hold — no failure, no error, no
// escaping exception — counting what passed and what was skipped; for a backward
// law on a kernel whose rows with no visible key give NaN, the one failure its
// contract allows.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "cases/decode.h"
#include "cases/random_source.h"
#include "properties/laws.h"
#include "reference/scenario.h"

namespace attncheck::test {

struct LawRunCounts {
  int passed = 0, skipped = 0;
};

inline LawRunCounts ExpectLawHolds(const Law& law, Adapter& adapter, const std::string& name, const Capabilities& caps,
                                   uint64_t seed, int cases) {
  LawRunCounts counts;
  for (int i = 0; i < cases; ++i) {
    RandomSource source(seed, static_cast<uint64_t>(i));
    const Case c = Decode(source, caps);
    const Verdict verdict = RunLaw(law, adapter, c, Options{});  // an escaping exception: an error verdict
    EXPECT_NE(verdict.outcome, Outcome::kFail) << name << " × " << law.name << ": " << verdict.message << "\n"
                                               << fmt::format("{}", c);
    EXPECT_FALSE(IsAdapterError(verdict.outcome)) << name << " × " << law.name << ": " << verdict.message << "\n"
                                                  << fmt::format("{}", c);
    counts.passed += verdict.outcome == Outcome::kPass;
    counts.skipped += verdict.outcome == Outcome::kSkip;
  }
  return counts;
}

struct BackwardRunCounts {
  int passed = 0, skipped = 0, nan_rows = 0;
  int passed_bf16 = 0;  // of `passed`, the cases drawn in bf16
};

// As ExpectLawHolds for a backward law on a kernel whose masked-row policy allows NaN
// (libtorch 1.13, ggml's soft_max), on cases drawn for the law: no failure; a hazard
// only where the case that ran has a row with no visible key and the gradient is not
// finite — that row's NaN spreading into dk and dv of every key (pytorch #41508),
// which RunLaw grades a hazard under such a contract (FINDINGS.md); counted in
// nan_rows. Any other failure or hazard fails the test.
inline BackwardRunCounts ExpectBackwardLawHolds(const Law& law, Adapter& adapter, const std::string& name,
                                                const Capabilities& caps, uint64_t seed, int cases) {
  BackwardRunCounts counts;
  const std::optional<Capabilities> narrowed = NarrowToNeeds(caps, law.needs, nullptr);
  if (!narrowed) return counts;
  for (int i = 0; i < cases; ++i) {
    RandomSource source(seed, static_cast<uint64_t>(i));
    const Case c = Decode(source, *narrowed, law.needs);
    const Verdict verdict = RunLaw(law, adapter, c, Options{});
    const reference::Scenario ran = reference::MakeScenario(verdict.ran_case.value_or(c));
    const bool has_empty_row = std::find(ran.empty_row.begin(), ran.empty_row.end(), 1) != ran.empty_row.end();
    const bool nan_row = verdict.outcome == Outcome::kHazard && has_empty_row && !std::isfinite(verdict.worst.got);
    EXPECT_TRUE((verdict.outcome != Outcome::kFail && verdict.outcome != Outcome::kHazard) || nan_row)
        << name << " × " << law.name << ": " << verdict.message << "\n" << fmt::format("{}", c);
    EXPECT_FALSE(IsAdapterError(verdict.outcome)) << name << " × " << law.name << ": " << verdict.message << "\n"
                                                  << fmt::format("{}", c);
    counts.passed += verdict.outcome == Outcome::kPass;
    counts.passed_bf16 += verdict.outcome == Outcome::kPass && c.dtype == Dtype::kBf16;
    counts.skipped += verdict.outcome == Outcome::kSkip;
    counts.nan_rows += nan_row;
  }
  return counts;
}

}  // namespace attncheck::test
