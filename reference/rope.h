// Rotary position embedding (RoFormer, Su et al. 2021; seeds 001 and 003): each
// pair of dims (a, b) of a head vector is rotated by the angle p·theta_k, so
// (R_m q)ᵀ(R_n k) = qᵀ R_{n−m} k depends on n − m only. Two pair layouts exist.
#pragma once

#include <span>
#include <utility>
#include <vector>

#include <Eigen/Dense>

#include "cases/case.h"

namespace attncheck::reference {

// The unscaled RoPE frequencies theta_k = base^(−2k/rotary_dim), k = 0 … rotary_dim/2 − 1
// (rad per position; theta_0 = 1 is the fastest pair). Returns [rotary_dim/2].
std::vector<double> BaseFrequencies(double base, int rotary_dim);

// The two dims (a, b) of pair k in a head vector:
//   kInterleaved (GPT-J, RoFormer, ggml mode 0): (2k, 2k + 1)
//   kHalfSplit (GPT-NeoX, HF LLaMA, ggml NEOX):  (k, k + rotary_dim/2)
// 0 ≤ k < rotary_dim/2; dims ≥ rotary_dim never belong to a pair (partial rotary).
std::pair<int, int> PairDims(RopeLayout layout, int rotary_dim, int pair);

// Rotates one pair (x_a, x_b) by `angle` and scales it by `magnitude`:
//   x'_a = (x_a cos(angle) − x_b sin(angle))·magnitude
//   x'_b = (x_a sin(angle) + x_b cos(angle))·magnitude
void RotatePair(double& x_a, double& x_b, double angle, double magnitude);

// RoPE of one token's head vector at logical `position`, in place.
// x: [head_dim]; theta: [≥ rotary_dim/2] frequencies (rad per position);
// rotary_dim even, ≤ head_dim: only the first rotary_dim dims rotate, the rest pass
// through unchanged. Pair k (dims from PairDims) is rotated by position·theta_k and
// scaled by `magnitude` (YaRN's mscale on cos and sin; 1 for plain RoPE).
// Throws std::invalid_argument on an odd or too large rotary_dim or a short theta.
void RotatePairs(RopeLayout layout, std::span<double> x, int rotary_dim,
                 std::span<const double> theta, double position, double magnitude = 1.0);

// The rotation RotatePairs applies (magnitude 1) as a matrix R_p: [head_dim, head_dim],
// a 2×2 block [[cos, −sin], [sin, cos]] of angle p·theta_k on the dims of each pair
// and identity on dims ≥ rotary_dim. RotatePairs(x) = R_p x, R_mᵀ R_n = R_{n−m}.
// For tests: (R_m q)ᵀ(R_n k) = qᵀ R_{n−m} k.
Eigen::MatrixXd RotationMatrix(RopeLayout layout, int head_dim, int rotary_dim,
                               std::span<const double> theta, double position);

}  // namespace attncheck::reference
