// KERPLE (Chi, Fan, Ramadge, Rudnicky 2022, "Kernelized Relative Positional Embedding
// for Length Extrapolation"; seed 003): a conditionally positive definite kernel of the
// distance |Δ| = |q_pos − k_pos| added to the score of each head:
//   power: −r1·|Δ|^r2      (r1 > 0, 0 < r2 ≤ 2)
//   log:   −r1·ln(1 + r2·|Δ|)   (r1, r2 > 0)
// r1, r2 are learned per head in the paper; here they come from fixed tables by head.
#pragma once

#include "cases/case.h"

namespace attncheck::reference {

struct KerpleParams {
  double r1 = 1;
  double r2 = 1;
};

// (r1, r2) of query head `head` (0-based), entry head % 8 of the kind's table:
//   power: r1 = {1, 0.5, 2, 0.25, 1.5, 0.125, 0.75, 4},  r2 = {1, 0.5, 1.5, 2, 0.25, 1.25, 0.75, 1.75}
//   log:   r1 = {1, 2, 0.5, 4, 0.25, 1.5, 3, 8},        r2 = {1, 0.5, 2, 0.25, 4, 1.5, 0.125, 8}
// All satisfy the paper's constraints; the bias is added after the 1/√d score scale
// (as our ALiBi), so r1 absorbs the paper's 1/√d.
KerpleParams KerpleHeadParams(KerpleKind kind, int head);

// Bias for distance query_pos − key_pos with the given parameters.
double KerpleBias(KerpleKind kind, const KerpleParams& params, int query_pos, int key_pos);

}  // namespace attncheck::reference
