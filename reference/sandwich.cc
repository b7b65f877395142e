// Sandwich score bias (sandwich.h).
#include "reference/sandwich.h"

#include <cmath>

namespace attncheck::reference {

// scale·(Σ_{i=1}^{d'/2} cos(Δ·10000^(−2i/d')) − d'/2)
double SandwichBias(double sandwich_scale, int head_dim, int query_pos, int key_pos) {
  const int half = head_dim / 2;
  const double delta = static_cast<double>(query_pos) - key_pos;
  double sum = 0.0;
  for (int i = 1; i <= half; ++i) {
    sum += std::cos(delta * std::pow(10000.0, -2.0 * i / head_dim));
  }
  return sandwich_scale * (sum - half);
}

}  // namespace attncheck::reference
