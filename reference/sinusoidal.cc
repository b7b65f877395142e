// Sinusoidal absolute position encoding (sinusoidal.h).
#include "reference/sinusoidal.h"

#include <cmath>

namespace attncheck::reference {

// i = ⌊dim/2⌋, omega_i = 10000^(−2i/d); even dims sin(p·omega_i), odd dims cos(p·omega_i).
double SinusoidalValue(int position, int dim, int head_dim) {
  const int i = dim / 2;
  const double omega = std::pow(10000.0, -2.0 * i / head_dim);
  const double angle = position * omega;
  return dim % 2 == 0 ? std::sin(angle) : std::cos(angle);
}

void AddSinusoidal(std::span<double> x, int position) {
  const int head_dim = static_cast<int>(x.size());
  for (int dim = 0; dim < head_dim; ++dim) {
    x[dim] += SinusoidalValue(position, dim, head_dim);
  }
}

}  // namespace attncheck::reference
