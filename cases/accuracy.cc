// The printed form of a declared accuracy (cases/accuracy.h), for `attncheck list`,
// and the unit roundoff of each dtype.
#include "cases/accuracy.h"

#include <cmath>

#include <fmt/format.h>

namespace attncheck {

double UnitRoundoff(Dtype dtype) {
  switch (dtype) {
    case Dtype::kF32: return std::ldexp(1.0, -24);
    case Dtype::kF16: return std::ldexp(1.0, -11);
    case Dtype::kBf16: return std::ldexp(1.0, -8);
  }
  return 1.0;
}

std::string Describe(const Accuracy& accuracy) {
  std::string text = fmt::format("scores {}-accum, P·V {}-accum", Name(accuracy.score_accum), Name(accuracy.pv_accum));
  if (accuracy.scores_in_input_dtype) text += ", S in input dtype";
  if (accuracy.p_in_input_dtype) text += ", P in input dtype";
  return text;
}

}  // namespace attncheck
