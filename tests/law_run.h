// For the tests of real-library adapters (ggml, libtorch): run one law over a
// short stream of decoded cases and expect it to hold — no failure, no error, no
// escaping exception — counting what passed and what was skipped.
#pragma once

#include <cstdint>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "cases/decode.h"
#include "cases/random_source.h"
#include "properties/laws.h"

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

}  // namespace attncheck::test
