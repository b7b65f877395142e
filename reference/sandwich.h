// Sandwich (Chi, Fan, Rudnicky, Ramadge 2023, "Dissecting Transformer Length
// Extrapolation via the Lens of Receptive Field Analysis"; seed 003): the dot product
// of two sinusoidal embeddings as a score bias, shifted so that Δ = 0 gets 0:
//   bias(Δ) = sandwich_scale·(Σ_{i=1}^{d'/2} cos(Δ / 10000^{2i/d'}) − d'/2),
//   Δ = q_pos − k_pos, d' = head_dim.
#pragma once

namespace attncheck::reference {

// The bias above for d' = head_dim (⌊head_dim/2⌋ terms). The sum runs i = 1 … d'/2 as
// in seed 003's equation p_mᵀp_n = Σ_{i=1}^{d̄/2} cos((m − n)/10000^{2i/d̄}) (its numpy
// snippet uses i = 0 … d̄/2 − 1; we follow the equation). Every term is ≤ 1, so the
// bias is ≤ 0 and 0 at Δ = 0. The paper's per-head compression (dividing head h by
// (h + 1)·8/H) is not applied: one sandwich_scale for all heads.
double SandwichBias(double sandwich_scale, int head_dim, int query_pos, int key_pos);

}  // namespace attncheck::reference
