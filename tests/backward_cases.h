// The cases of a law's stream that an adapter's backward runs (tests of the
// backward's calls): decoded under the law's needs, skipping what the adapter or
// its backward does not take, each visited with its scenario and stream index.
#pragma once

#include <cstdint>
#include <string_view>

#include "adapters/harness.h"
#include "cases/decode.h"
#include "cases/random_source.h"
#include "properties/law_support.h"
#include "properties/laws.h"

namespace attncheck {

template <class Visit>
int ForBackwardCases(Adapter& adapter, std::string_view law_name, uint64_t seed, int cases, Visit visit) {
  const Law& law = *FindLaw(law_name);
  const Capabilities caps = *NarrowToNeeds(adapter.capabilities(), law.needs, nullptr);
  int ran = 0;
  for (uint64_t i = 0; i < static_cast<uint64_t>(cases); ++i) {
    RandomSource source(LawStreamSeed(seed, law.name), i);
    const Case c = Decode(source, caps, law.needs);
    if (WhyUnsupported(adapter, c)) continue;
    const reference::Scenario s = reference::MakeScenario(c);
    if (WhyBackwardUnsupported(adapter, s, c.mask)) continue;
    ++ran;
    visit(c, s, i);
  }
  return ran;
}

}  // namespace attncheck
