// The naive model of a kernel's declared accuracy (cases/accuracy.h, DESIGN §6):
// attention as reference/attention.h writes it, in double, rounded after each
// operation to the dtype the kernel declares for that stage. Inputs and output
// are in the case dtype; the softmax (max, exp, sum, divide) runs in f32.
#pragma once

#include <optional>
#include <vector>

#include "cases/accuracy.h"
#include "reference/data.h"
#include "reference/tensor.h"

namespace attncheck::reference {

// out [B, Hq, Tq, Dv] of the declared model. q [B,Hq,Tq,D], k [B,Hkv,Tk,D] already
// encoded, v [B,Hkv,Tk,Dv], visible [B,Tq,Tk], bias [B,Hq,Tq,Tk] or nullptr; every
// input is rounded to `input` first. A row with no visible key is 0.
//   S_j = R_s(scale·Σ_d R_s(q_d k_jd)), softcap, + R_in(bias); R_in(S_j) when declared
//   P_j = R_32(e^(S_j − max S) / Σ e^(...)); R_in(P_j) when declared
//   out = R_in(Σ_j R_pv(P_j v_jd)), the sum rounded to R_pv after every term
// One element of a score bias as a kernel of `dtype` is handed it: the harness folds
// the bias into an additive mask of the case dtype (adapters/harness_plan.cc), so
// every same-dtype model (this one, the backward's) rounds it the same way.
inline double HandedBias(Dtype dtype, double bias) { return RoundTo(dtype, bias); }

// A visible (b, h, i, j) whose declared score S_j (above) is not finite: f16's
// 65504 exceeded where the kernel declares f16 accumulation or S stored in f16;
// `exact` is the score in double from the same inputs (finite: the inputs are).
struct ScoreOverflow {
  int b = 0, h = 0, i = 0, j = 0;
  double exact = 0.0;
};

// Whether a declared score can overflow at all: only f16 has a range below
// f32's (65504; bf16 and f32 reach 3.4e38), so only an f16 score accumulation or
// S stored in an f16 input dtype.
inline bool ScoresMayOverflow(const Accuracy& accuracy, Dtype input) {
  return accuracy.score_accum == Dtype::kF16 || (accuracy.scores_in_input_dtype && input == Dtype::kF16);
}

// The first such score, in (b, h, i, j) order, of the same inputs as
// DeclaredAttention; nullopt when every visible score is finite. A kernel handed
// such a case cannot compute it as it declares (ONNX Runtime's f16 Attention
// answers NaN), so the harness refuses it rather than judge it.
std::optional<ScoreOverflow> FirstScoreOverflow(const TensorD& q, const TensorD& k, const std::vector<uint8_t>& visible,
                                                const TensorD* bias, double scale, double softcap, Dtype input,
                                                const Accuracy& accuracy);

TensorD DeclaredAttention(const TensorD& q, const TensorD& k, const TensorD& v, const std::vector<uint8_t>& visible,
                          const TensorD* bias, double scale, double softcap, Dtype input, const Accuracy& accuracy);

}  // namespace attncheck::reference
