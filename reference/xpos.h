// xPos (Sun et al. 2022, "A Length-Extrapolatable Transformer"; torchscale `XPOS`):
// RoPE rotation plus a per-pair exponential scale, query at position n scaled by
// ζ_i^(n/γ), key at m by ζ_i^(−m/γ), so q'·k' depends on n − m only:
//   ζ_i = (2i/rd + 0.4)/1.4,  i = 0 … rd/2 − 1,  γ = scale_base (512 in the paper).
#pragma once

#include <span>

#include "cases/case.h"

namespace attncheck::reference {

// ζ_pair = (2·pair/rotary_dim + 0.4)/1.4, in [0.2857, 1).
double XposZeta(int pair, int rotary_dim);

// xPos of one token's head vector at logical `position`, in place. x: [head_dim];
// pair k (PairDims(layout, rotary_dim, k)) is rotated by position·theta_k with the
// unscaled theta_k = base^(−2k/rotary_dim) and scaled by ζ_k^(±position/scale_base):
// + for the query (is_key false), − for the key. Dims ≥ rotary_dim pass unchanged.
// torchscale centres positions (−T/2 … T/2) to keep ζ^(±p/γ) in range; we use the
// logical positions as they are (the product is the same); note ζ_0^(−m/γ) exceeds
// the f16 range once m/γ > 8.8.
void ApplyXpos(RopeLayout layout, std::span<double> x, int rotary_dim, double base,
               double scale_base, double position, bool is_key);

}  // namespace attncheck::reference
