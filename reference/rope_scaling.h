// RoPE context-extension scalings: the per-pair frequencies theta_k (and YaRN's
// magnitude) for none, linear PI, NTK-aware, dynamic NTK, YaRN / NTK-by-parts,
// Llama3 and NTK-mixed, plus the log-n query scale. Sources: seeds 002 (NTK base),
// 003 (PI, NTK, dynamic NTK, NTK-by-parts code), 004 (NTK-mixed, log n); HF
// transformers `modeling_rope_utils` and ggml `rope_yarn` for YaRN and Llama3.
#pragma once

#include <utility>
#include <vector>

#include "cases/case.h"
#include "cases/rope_magnitudes.h"

namespace attncheck::reference {

struct RopeFrequencies {
  std::vector<double> theta;  // [rotary_dim/2] per pair, rad per position
  double mscale = 1;          // magnitude on cos/sin (YaRN), 1 otherwise
};

// The frequencies the spec's scaling gives, s = spec.factor, L = spec.original_context,
// b = spec.base, d = rotary_dim, theta_k = b^(−2k/d) (k = 0 … d/2 − 1):
//   kNone:       theta_k
//   kLinear:     theta_k / s                                   (PI, Chen et al. 2023)
//   kNtkAware:   b'^(−2k/d), b' = NtkAwareBase(b, s, d, spec.ntk_exact_exponent)
//   kDynamicNtk: b'^(−2k/d), b' = DynamicNtkBase(b, s, d, current_length, L)
//   kYarn:       NTK-by-parts ramp between theta_k/s and theta_k, linear in the pair
//                index (HF, ggml, the YaRN authors' code), mscale (see .cc)
//   kYarnPaper:  the same blend with the paper's ramp γ(r), linear in r = L·theta_k/2π
//   kLlama3:     wavelength bands: theta_k, theta_k/s, or smoothed between (see .cc)
//   kNtkMixed:   theta_k / (λ_1⋯λ_{k+1}), λ from NtkMixedLambdas(d, s, spec.mixed_b)
// current_length: the length the dynamic scaling sees (max position + 1 of the call).
RopeFrequencies Frequencies(const RopeSpec& spec, int rotary_dim, int current_length);

// NTK-aware base (bloc97; seed 002): b' = b·s^(d/(d−2)) when exact, else b·s.
// Worked (d = 128, s = 4, b = 10000): exact 40889.94, exponent 1: 40000. (Seed 002
// prints 41810.5 for the exact form; that number does not follow from its formula.)
// d ≤ 2 has the single pair theta_0 = 1 for every base; we return b·s there.
double NtkAwareBase(double base, double s, int rotary_dim, bool exact);

// Dynamic NTK (emozilla; HF `_compute_dynamic_ntk_parameters`): for L_cur > L_orig,
// α' = s·L_cur/L_orig − (s − 1), b' = b·α'^(d/(d−2)); else b (α' ≤ 1 is never used).
// The exponent is always the exact d/(d−2), as in HF.
double DynamicNtkBase(double base, double s, int rotary_dim, int current_length,
                      int original_context);

// YaRN correction range (HF `_yarn_find_correction_range`, ggml
// `ggml_rope_yarn_corr_dims`): the pair-index interval between the pair that
// completes beta_fast rotations over L and the one that completes beta_slow:
//   dim(β) = d·ln(L / (β·2π)) / (2 ln b),
//   low = max(floor(dim(beta_fast)), 0), high = min(ceil(dim(beta_slow)), d − 1).
// Each end is clamped on one side only, as in HF and ggml: for L < 2π·beta_slow, high
// is negative and below low (see YaRN in the .cc for how the ramp treats that).
// Worked: d 64, L 4096, β_fast 32, β_slow 1, b 10000 → [10, 23].
std::pair<double, double> YarnCorrectionDims(int rotary_dim, double base, int original_context,
                                             double beta_fast, double beta_slow);

// YaRN's magnitude on cos and sin (cases/rope_magnitudes.h).
using attncheck::YarnMscale;

// NTK-RoPE-mixed (Su, seed 004): λ_1 ≥ λ_2 ≥ … ≥ λ_{d/2} ≥ 1 with cumulative
// products λ_1⋯λ_m = exp(a·m^b), a = ln s / (d/2)^b, so λ_1⋯λ_{d/2} = s and
//   λ_m = exp(a·(m^b − (m − 1)^b)),  λ_1 = exp(a).
// Returns [d/2], element m − 1 holding λ_m (seed's 1-based digit m). Monotone for
// 0 ≤ b ≤ 1 and s ≥ 1; b = 1 is NTK-RoPE-fixed (all λ = s^(2/d)), b = 0 is PI.
std::vector<double> NtkMixedLambdas(int rotary_dim, double s, double b);

// The log-n query scale (cases/rope_magnitudes.h).
using attncheck::LogNScale;

}  // namespace attncheck::reference
