// Magnitudes of the value profiles (cases/case.h ValueProfile): reference/data.cc
// draws q, k and v with them, and Decode's informative-oracle hook
// (cases/predicted_floor.h) predicts from them the tolerance a case will get.
#pragma once

#include "cases/case.h"

namespace attncheck {

// large-logits: every q and k element ×8 (v stays normal).
inline constexpr double kLargeLogitFactor = 8.0;
// extreme-logits: k[D−1] = this for every key (a power of two: q[D−1]·k[D−1] is exact).
inline constexpr double kExtremeKeyComponent = 64.0;
// extreme-logits: each query row's score offset S, f32 and bf16 (scaled scores).
inline constexpr double kExtremeWideScores[] = {-6e4, -1.5e4, 1.5e4, 6e4};
// extreme-logits in f16: q·k before the scale (under half of f16's 65504).
inline constexpr double kExtremeF16Dots[] = {-3.2e4, -8e3, 8e3, 3.2e4};

// Mean square of one q or k element under the profile (the normal draws have
// variance 1, ties are uniform on {−1, 0, 1}); extreme-logits' last dim apart.
constexpr double QkMeanSquare(ValueProfile profile) {
  switch (profile) {
    case ValueProfile::kLargeLogits: return kLargeLogitFactor * kLargeLogitFactor;
    case ValueProfile::kTies: return 2.0 / 3.0;
    default: return 1.0;
  }
}

}  // namespace attncheck
