// PredictedFloor: properties/tolerance.h's floor term by term, on typical norms.
#include "cases/predicted_floor.h"

#include <algorithm>
#include <cmath>

#include "cases/rope_magnitudes.h"
#include "cases/value_profiles.h"

namespace attncheck {
namespace {

// A row's |q_i|·max_j|k_j| reaches about this multiple of the typical D·mean
// square: the longest of up to Tk keys, and the spread of |q_i| over the rows.
constexpr double kNormSpread = 2.0;

// |q_i|·max|k_j|·scale for q, k of the profile: the random dims at kNormSpread
// times their typical product, extreme-logits' offset exactly (its largest level).
double TypicalDotBound(const Case& c, int largest_position) {
  const double scale = c.effective_scale();
  double dot = kNormSpread * c.head_dim * QkMeanSquare(c.profile) * scale;
  if (c.profile == ValueProfile::kExtremeLogits) {
    dot += c.dtype == Dtype::kF16 ? kExtremeF16Dots[3] * scale : kExtremeWideScores[3];
  }
  if (c.encoding.kind == EncodingKind::kRope) {
    // RoPE's magnitudes (cases/rope_magnitudes.h): YaRN's on q and k (cos and sin
    // scaled), log-n's on q at the largest position (ln 65537 / ln L: 4.6 for L = 11)
    const RopeSpec& rope = c.encoding.rope;
    if (rope.scaling == RopeScaling::kYarn || rope.scaling == RopeScaling::kYarnPaper) {
      const double mscale = YarnMscale(rope.factor, rope.attn_factor);
      dot *= mscale * mscale;
    }
    if (rope.log_n) dot *= LogNScale(largest_position, rope.original_context);
  }
  if (c.encoding.kind == EncodingKind::kXpos && c.encoding.xpos_scale_base > 0.0) {
    // xPos scales a key at position m by ζ^(−m/scale_base), most for the first
    // pair's ζ_0 = 0.4/1.4 (reference/xpos.cc): its norm grows up to (1.4/0.4)^(p/scale_base).
    dot *= std::pow(1.4 / 0.4, largest_position / c.encoding.xpos_scale_base);
  }
  return dot;
}

}  // namespace

double PredictedFloor(const Capabilities& caps, const Case& c, int largest_position, int visible_keys) {
  const Accuracy& accuracy = caps.accuracy;
  const double u = UnitRoundoff(c.dtype), u32 = std::ldexp(1.0, -24);
  const double u_score = UnitRoundoff(accuracy.score_accum), u_pv = UnitRoundoff(accuracy.pv_accum);
  const EncodingKind kind = c.encoding.kind;
  double per_unit = (2.0 * std::sqrt(static_cast<double>(c.head_dim)) + 4.0) * u_score;
  if (caps.owns_rope && EncodesQk(kind)) per_unit += 2.0 * u + 4.0 * u32;
  if (caps.owns_rope && (kind == EncodingKind::kRope || kind == EncodingKind::kXpos)) {
    per_unit += 4.0 * u32 * (largest_position + 1.0);
  }
  const double dot = TypicalDotBound(c, largest_position);
  double score_error = per_unit * dot;
  if (accuracy.scores_in_input_dtype) score_error += 2.0 * u * (c.softcap > 0.0 ? std::min(dot, c.softcap) : dot);
  return 4.0 * u + 2.0 * std::sqrt(static_cast<double>(visible_keys)) * u_pv + 2.0 * score_error;
}

double TypicalScoreSpread(const Case& c) {
  if (c.profile == ValueProfile::kExtremeLogits) return INFINITY;
  return std::sqrt(static_cast<double>(c.head_dim)) * QkMeanSquare(c.profile) * c.effective_scale();
}

}  // namespace attncheck
