// The eigen kernel's head computation with AVX2+FMA (adapters/eigen/avx2_head.cc):
// the same steps and semantics as the portable Eigen path of eigen_adapter.cc,
// eight float lanes at a time; reached only where the CPU has AVX2 and FMA.
#pragma once

#include <cstddef>
#include <span>

namespace attncheck::adapters {

// Whether this CPU runs the AVX2+FMA path (checked once).
bool HasAvx2Fma();

// One (batch, head), row-major with outer strides (in floats): q [Tq, D], k [Tk, D],
// v [Tk, Dv], mask [Tq, Tk] additive (−inf = blocked) → out [Tq, Dv].
struct HeadArgs {
  const float* q;
  const float* k;
  const float* v;
  const float* mask;
  float* out;
  std::ptrdiff_t q_stride, k_stride, v_stride, mask_stride, out_stride;
  int tq, tk, head_dim, value_dim;
  float scale, softcap;
};

// S = scale·q·kᵀ; softcap; fused mask; row max; w = exp(S − max) (blocked → 0);
// out = Σ_{w_j>0} w_j v_j / Σ w; a row without a visible key → 0. Requires HasAvx2Fma().
void Avx2AttendHead(const HeadArgs& a);

// The path's exp and tanh applied to x → out (equal sizes; tests). Require HasAvx2Fma().
void Avx2Exp(std::span<const float> x, std::span<float> out);
void Avx2Tanh(std::span<const float> x, std::span<float> out);

}  // namespace attncheck::adapters
