// The magnitudes a RoPE spec (cases/case.h RopeSpec) puts on q and k beside the
// rotation: YaRN's factor on cos and sin, and log-n's on the query. The reference
// (reference/rope_scaling.h) encodes with them; Decode's informative-oracle hook
// (cases/predicted_floor.h) predicts the norms they give.
#pragma once

#include <algorithm>
#include <cmath>

namespace attncheck {

// YaRN magnitude on cos and sin: attn_factor when > 0, else 0.1·ln s + 1 (HF
// `get_mscale`; 1 when s ≤ 1).
inline double YarnMscale(double s, double attn_factor) {
  if (attn_factor > 0) return attn_factor;
  if (s <= 1) return 1.0;
  return 0.1 * std::log(s) + 1.0;
}

// log-n attention scale (Su, seed 004): max(1, ln n / ln L) with n = position + 1
// tokens seen by the query at logical `position` (HF form
// `((position_ids + 1).log() / log(L)).clip(1)`), applied to the QUERY only.
// 1 for every position < L; 1 when L ≤ 1 (no log base).
inline double LogNScale(int position, int original_context) {
  if (original_context <= 1) return 1.0;
  const double tokens_seen = static_cast<double>(position) + 1.0;
  return std::max(1.0, std::log(tokens_seen) / std::log(static_cast<double>(original_context)));
}

}  // namespace attncheck
