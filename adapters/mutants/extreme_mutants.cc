// Extreme-logit and decode-step mutants: the eigen kernel with one shipped bug
// that only shows at very negative scores (a finite running-max sentinel, a
// "fully masked" test written as a score threshold) or only across decode steps
// (a RoPE scaling length recomputed from the cache so far).
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "adapters/mutants/mutant_base.h"

namespace attncheck::mutants {
namespace {

// Scores of query row i of a head, scale·q·k (softcapped) + mask; −inf where blocked.
void RowScores(const Head& a, int i, std::vector<float>& scores) {
  scores.assign(static_cast<size_t>(a.tk), kNegInf);
  const float* q = a.q + static_cast<size_t>(i) * a.head_dim;
  const float* mask = a.mask + static_cast<size_t>(i) * a.tk;
  for (int j = 0; j < a.tk; ++j) {
    if (mask[j] == kNegInf) continue;
    float dot = 0.0f;
    for (int d = 0; d < a.head_dim; ++d) dot += q[d] * a.k[static_cast<size_t>(j) * a.head_dim + d];
    float s = dot * a.scale;
    if (a.softcap > 0.0f) s = a.softcap * std::tanh(s / a.softcap);
    scores[static_cast<size_t>(j)] = s + mask[j];
  }
}

void ZeroRow(const Head& a, int i) {
  std::fill_n(a.out + static_cast<size_t>(i) * a.value_dim, a.value_dim, 0.0f);
}

// Online softmax (FlashAttention's running max m, sum l, accumulator) whose
// running max starts at the finite −5e4 instead of −inf, as FlashInfer shipped
// for f16 safety: a row whose scores all lie below −5e4 − 104 gets exp(s − m) = 0
// for every key, l = 0, and the kernel's l == 0 guard writes zeros.
class SoftmaxFiniteSentinel final : public MutantAdapter {
  static constexpr float kSentinel = -5e4f;
  void AttendHead(const Head& a) override {
    std::vector<float> scores, acc(static_cast<size_t>(a.value_dim));
    for (int i = 0; i < a.tq; ++i) {
      RowScores(a, i, scores);
      float running_max = kSentinel, sum = 0.0f;
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int j = 0; j < a.tk; ++j) {
        const float s = scores[static_cast<size_t>(j)];
        if (s == kNegInf) continue;
        const float next_max = std::max(running_max, s);
        const float rescale = std::exp(running_max - next_max), p = std::exp(s - next_max);
        sum = sum * rescale + p;
        const float* v = a.v + static_cast<size_t>(j) * a.value_dim;
        for (int d = 0; d < a.value_dim; ++d) acc[static_cast<size_t>(d)] = acc[static_cast<size_t>(d)] * rescale + p * v[d];
        running_max = next_max;
      }
      if (!(sum > 0.0f)) {
        ZeroRow(a, i);
        continue;
      }
      for (int d = 0; d < a.value_dim; ++d) a.out[static_cast<size_t>(i) * a.value_dim + d] = acc[static_cast<size_t>(d)] / sum;
    }
  }
};

// The "row has no visible key" test written as `max score <= -1e4` (the kernel's
// own mask fill), as kernels that block with −1e4 do: a real row whose scores
// all lie at or below −1e4 is taken for fully masked and zeroed.
class RowMaxThresholdZeroes final : public MutantAdapter {
  static constexpr float kMaskedBelow = -1e4f;
  void AttendHead(const Head& a) override {
    MutantAdapter::AttendHead(a);
    std::vector<float> scores;
    for (int i = 0; i < a.tq; ++i) {
      RowScores(a, i, scores);
      if (*std::max_element(scores.begin(), scores.end()) <= kMaskedBelow) ZeroRow(a, i);
    }
  }
};

// Dynamic NTK whose length L is recomputed at every call from the keys it holds
// (max key position + 1, as HF's dynamic RoPE takes seq_len from the current
// forward) instead of the sequence's: one prefill is right, but each decode step
// rotates with the base of the cache so far, so the base drifts between steps.
class DynamicNtkStepLength final : public MutantAdapter {
  void Adjust(Capabilities& caps) const override {
    caps.encodings = {EncodingKind::kRope};
    caps.rope_scalings = {RopeScaling::kDynamicNtk};
    // the drift shows where a decode step crosses the original context: keep the
    // drawn positions near the small contexts (2048 and below) where that happens
    caps.max_position = 4096;
  }
  int CurrentLength(const Call&, const Inputs& in) const override {
    int length = 1;
    for (int position : in.key_positions) length = std::max(length, position + 1);
    return length;
  }
};

}  // namespace

std::vector<MutantDef> ExtremeMutants() {
  return {
      Def<SoftmaxFiniteSentinel>(
          "softmax-finite-sentinel",
          "online-softmax running max starts at -5e4, not -inf (FlashInfer): rows scoring below it come out zero",
          {"reference-agreement"}),
      Def<RowMaxThresholdZeroes>(
          "row-max-threshold-zeroes",
          "fully-masked-row test written as max score <= -1e4: real rows with very negative scores are zeroed",
          {"reference-agreement"}),
      Def<DynamicNtkStepLength>(
          "dynamic-ntk-step-length",
          "dynamic-NTK length recomputed from the cache at each decode step (HF seq_len): the base drifts",
          {"decode-consistency"}),
  };
}

}  // namespace attncheck::mutants
