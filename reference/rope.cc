// Rotary position embedding: pair layouts, rotation and its matrix form (rope.h).
#include "reference/rope.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace attncheck::reference {
namespace {

void CheckRotaryDim(int head_dim, int rotary_dim, size_t theta_size) {
  if (rotary_dim < 0 || rotary_dim % 2 != 0 || rotary_dim > head_dim) {
    throw std::invalid_argument("rope: rotary_dim " + std::to_string(rotary_dim) +
                                " must be even and in [0, head_dim=" + std::to_string(head_dim) + "]");
  }
  if (theta_size < static_cast<size_t>(rotary_dim / 2)) {
    throw std::invalid_argument("rope: " + std::to_string(theta_size) + " frequencies for rotary_dim " +
                                std::to_string(rotary_dim));
  }
}

}  // namespace

// theta_k = base^(−2k/rotary_dim)  (RoFormer eq. 15; HF inv_freq = 1/base^(arange(0, d, 2)/d)).
std::vector<double> BaseFrequencies(double base, int rotary_dim) {
  std::vector<double> theta(static_cast<size_t>(rotary_dim / 2));
  for (int k = 0; k < rotary_dim / 2; ++k) {
    theta[k] = std::pow(base, -2.0 * k / rotary_dim);
  }
  return theta;
}

std::pair<int, int> PairDims(RopeLayout layout, int rotary_dim, int pair) {
  switch (layout) {
    case RopeLayout::kInterleaved:
      return {2 * pair, 2 * pair + 1};
    case RopeLayout::kHalfSplit:
      return {pair, pair + rotary_dim / 2};
  }
  throw std::invalid_argument("rope: unknown layout");
}

void RotatePair(double& x_a, double& x_b, double angle, double magnitude) {
  const double cos_angle = std::cos(angle);
  const double sin_angle = std::sin(angle);
  const double a = x_a;
  const double b = x_b;
  x_a = (a * cos_angle - b * sin_angle) * magnitude;
  x_b = (a * sin_angle + b * cos_angle) * magnitude;
}

// x'_a = (x_a cos(p theta_k) − x_b sin(p theta_k))·magnitude,
// x'_b = (x_a sin(p theta_k) + x_b cos(p theta_k))·magnitude, for each pair k < rotary_dim/2.
void RotatePairs(RopeLayout layout, std::span<double> x, int rotary_dim,
                 std::span<const double> theta, double position, double magnitude) {
  CheckRotaryDim(static_cast<int>(x.size()), rotary_dim, theta.size());
  for (int k = 0; k < rotary_dim / 2; ++k) {
    const auto [a, b] = PairDims(layout, rotary_dim, k);
    RotatePair(x[a], x[b], position * theta[k], magnitude);
  }
}

// R_p: identity, then for each pair k the block
//   R[a][a] = cos, R[a][b] = −sin, R[b][a] = sin, R[b][b] = cos   (angle p·theta_k).
Eigen::MatrixXd RotationMatrix(RopeLayout layout, int head_dim, int rotary_dim,
                               std::span<const double> theta, double position) {
  CheckRotaryDim(head_dim, rotary_dim, theta.size());
  Eigen::MatrixXd rotation = Eigen::MatrixXd::Identity(head_dim, head_dim);
  for (int k = 0; k < rotary_dim / 2; ++k) {
    const auto [a, b] = PairDims(layout, rotary_dim, k);
    const double angle = position * theta[k];
    rotation(a, a) = std::cos(angle);
    rotation(a, b) = -std::sin(angle);
    rotation(b, a) = std::sin(angle);
    rotation(b, b) = std::cos(angle);
  }
  return rotation;
}

}  // namespace attncheck::reference
