// xPos: rotation with a per-pair exponential scale (xpos.h).
#include "reference/xpos.h"

#include <cmath>
#include <stdexcept>

#include "reference/rope.h"

namespace attncheck::reference {

double XposZeta(int pair, int rotary_dim) {
  return (2.0 * pair / rotary_dim + 0.4) / 1.4;
}

// x'_pair = R(position·theta_k)·x_pair·ζ_k^(sign·position/scale_base), sign = +1 query, −1 key.
void ApplyXpos(RopeLayout layout, std::span<double> x, int rotary_dim, double base,
               double scale_base, double position, bool is_key) {
  if (rotary_dim < 0 || rotary_dim % 2 != 0 || rotary_dim > static_cast<int>(x.size())) {
    throw std::invalid_argument("xpos: rotary_dim must be even and ≤ head_dim");
  }
  const std::vector<double> theta = BaseFrequencies(base, rotary_dim);
  const double sign = is_key ? -1.0 : 1.0;
  for (int k = 0; k < rotary_dim / 2; ++k) {
    const auto [a, b] = PairDims(layout, rotary_dim, k);
    const double magnitude = std::pow(XposZeta(k, rotary_dim), sign * position / scale_base);
    RotatePair(x[a], x[b], position * theta[k], magnitude);
  }
}

}  // namespace attncheck::reference
