// How a kernel computes (DESIGN §6, issue 13 point 5): the precision of its
// score and P·V accumulations and where it rounds to the input dtype. The naive
// model that sets the kernel's tolerance (reference/declared_attention.h) computes
// the same way. Defaults are the strict common case: f32 accumulation throughout.
#pragma once

#include <string>

#include "cases/case.h"

namespace attncheck {

struct Accuracy {
  Dtype score_accum = Dtype::kF32;     // accumulation of the q·k dot product
  Dtype pv_accum = Dtype::kF32;        // accumulation of Σ_j P_j·v_j
  bool scores_in_input_dtype = false;  // S (scaled, capped, biased) rounded to the input dtype before softmax
  bool p_in_input_dtype = false;       // P rounded to the input dtype before P·V (FlashAttention)

  bool operator==(const Accuracy&) const = default;
};

// Unit roundoff of a dtype: f32 2^−24, f16 2^−11, bf16 2^−8.
double UnitRoundoff(Dtype dtype);

// "scores f32-accum, P·V f32-accum" plus ", S in input dtype" / ", P in input dtype".
std::string Describe(const Accuracy& accuracy);

}  // namespace attncheck
