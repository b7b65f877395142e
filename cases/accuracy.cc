// The printed form of a declared accuracy (cases/accuracy.h), for `attncheck list`.
#include "cases/accuracy.h"

#include <fmt/format.h>

namespace attncheck {

std::string Describe(const Accuracy& accuracy) {
  std::string text = fmt::format("scores {}-accum, P·V {}-accum", Name(accuracy.score_accum), Name(accuracy.pv_accum));
  if (accuracy.scores_in_input_dtype) text += ", S in input dtype";
  if (accuracy.p_in_input_dtype) text += ", P in input dtype";
  return text;
}

}  // namespace attncheck
