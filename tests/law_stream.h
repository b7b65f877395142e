// Running a law over the first cases of its stream on one adapter, counting outcomes
// (tests of the backward laws and their calls), and whether the Python the test
// backends under tests/data/process run on has numpy.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>

#include "adapters/adapter.h"
#include "cases/decode.h"
#include "cases/random_source.h"
#include "properties/law_support.h"
#include "properties/laws.h"

namespace attncheck::test {

// Whether /usr/bin/python3 (the test backends' Python) imports numpy.
inline bool HaveNumpy() { return std::system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") == 0; }

struct Tally {
  int passed = 0, failed = 0, hazards = 0, skipped = 0, errors = 0;
  std::string first_failure;  // the first failure's message
};

// `law` on cases 0..cases−1 of its stream of `seed`; an error verdict is a test failure.
inline Tally RunStream(Adapter& adapter, const Law& law, int cases, uint64_t seed = 1) {
  Tally tally;
  const std::optional<Capabilities> caps = NarrowToNeeds(adapter.capabilities(), law.needs, nullptr);
  if (!caps) return tally;
  for (int i = 0; i < cases; ++i) {
    RandomSource source(LawStreamSeed(seed, law.name), static_cast<uint64_t>(i));
    const Verdict v = RunLaw(law, adapter, Decode(source, *caps, law.needs), Options{});
    switch (v.outcome) {
      case Outcome::kPass: ++tally.passed; break;
      case Outcome::kFail:
        if (tally.failed++ == 0) tally.first_failure = v.message;
        break;
      case Outcome::kHazard: ++tally.hazards; break;
      case Outcome::kSkip: ++tally.skipped; break;
      default:
        ++tally.errors;
        ADD_FAILURE() << adapter.name() << " × " << law.name << " case " << i << ": " << v.message;
        break;
    }
  }
  return tally;
}

}  // namespace attncheck::test
