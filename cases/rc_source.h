// RcSource: the Source for use inside a RapidCheck property (DESIGN §3). Each draw
// is its own labelled generator (`.as(name)`), so RapidCheck shrinks every field
// on its own towards its minimum and a counterexample names its fields.
#pragma once

#include <rapidcheck.h>

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "cases/source.h"

namespace attncheck {

class RcSource {
 public:
  // Uniform-ish in [lo, hi] (RapidCheck scales the range with its size); lo when
  // hi <= lo, without drawing.
  int64_t Int(int64_t lo, int64_t hi, std::string_view name) {
    if (hi <= lo) return lo;
    if (hi == std::numeric_limits<int64_t>::max()) {
      // inRange is half-open; give up the top value rather than overflow.
      return *rc::gen::inRange<int64_t>(lo, hi).as(std::string(name));
    }
    return *rc::gen::inRange<int64_t>(lo, hi + 1).as(std::string(name));
  }

  bool Bool(std::string_view name) { return *rc::gen::arbitrary<bool>().as(std::string(name)); }
};

static_assert(Source<RcSource>);

}  // namespace attncheck
