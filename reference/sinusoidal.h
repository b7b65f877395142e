// Sinusoidal absolute position encoding (Vaswani et al. 2017; seeds 001, 003):
//   PE(p)_{2i} = sin(p / 10000^{2i/d}),  PE(p)_{2i+1} = cos(p / 10000^{2i/d}),
// added to the query and the key head vectors (d = head_dim).
#pragma once

#include <span>

namespace attncheck::reference {

// PE(position)_dim for a vector of `head_dim` dims (dim < head_dim; an odd head_dim's
// last dim is a lone sin).
double SinusoidalValue(int position, int dim, int head_dim);

// x += PE(position). x: [head_dim] one token's head vector.
void AddSinusoidal(std::span<double> x, int position);

}  // namespace attncheck::reference
