// RoPE context-extension scalings (rope_scaling.h): one function per formula.
#include "reference/rope_scaling.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <span>
#include <stdexcept>
#include <vector>

#include "reference/rope.h"

namespace attncheck::reference {
namespace {

// Linear position interpolation (Chen et al. 2023): p' = p/s, i.e. theta'_k = theta_k / s.
std::vector<double> LinearTheta(std::span<const double> theta, double s) {
  std::vector<double> scaled(theta.begin(), theta.end());
  for (double& t : scaled) t /= s;
  return scaled;
}

// YaRN / NTK-by-parts (Peng et al. 2023; HF `_compute_yarn_parameters`, ggml `rope_yarn`).
// theta: [d/2] unscaled. With [low, high] = YarnCorrectionDims(...):
//   r_i = clamp((i − low)/max(high − low, 0.001), 0, 1)   ramp over pair index i
//   extrap_mask_i = 1 − r_i                         1 for fast pairs (i ≤ low), 0 for slow (i ≥ high)
//   theta'_i = (theta_i/s)·(1 − extrap_mask_i) + theta_i·extrap_mask_i
// Fast pairs keep theta (extrapolate), slow pairs are interpolated by s, a linear blend between.
// The denominator is ggml's `MAX(0.001f, high − low)`. It equals HF's (high == low →
// high + 0.001) whenever high ≥ low. They differ only when the one-sided clamps leave
// high < low: L < 2π·beta_slow (high < 0 = low) or a slowest pair that still turns
// beta_fast times over L (low > d − 1 = high). HF then divides by a negative number
// and flips the ramp; ggml keeps the step at low (pairs ≤ low keep theta, the rest
// theta/s, as the rotation counts ask). We follow ggml.
std::vector<double> YarnTheta(std::span<const double> theta, double s, int rotary_dim, double base,
                              int original_context, double beta_fast, double beta_slow) {
  const auto [low, high] = YarnCorrectionDims(rotary_dim, base, original_context, beta_fast, beta_slow);
  const double ramp_width = std::max(high - low, 0.001);
  std::vector<double> scaled(theta.size());
  for (size_t i = 0; i < theta.size(); ++i) {
    const double ramp = std::clamp((static_cast<double>(i) - low) / ramp_width, 0.0, 1.0);
    const double extrap_mask = 1.0 - ramp;
    const double theta_interp = theta[i] / s;
    const double theta_extrap = theta[i];
    scaled[i] = theta_interp * (1.0 - extrap_mask) + theta_extrap * extrap_mask;
  }
  return scaled;
}

// YaRN as the paper writes it (Peng et al. 2023, §3.2 "NTK-by-parts", eq. 18–19):
// the ramp is linear in r_i = L/λ_i = L·theta_i/(2π), the number of rotations pair i
// makes over the original context L (α = beta_slow, β = beta_fast):
//   γ(r) = 0 for r < α, 1 for r > β, (r − α)/(β − α) between;
//   theta'_i = (1 − γ(r_i))·theta_i/s + γ(r_i)·theta_i.
// The implementations (YarnTheta above) instead find the pair indices where r = β
// and r = α, round them outwards and ramp linearly in the pair index; the two agree
// outside the transition band and differ inside it (r is exponential in i).
std::vector<double> YarnPaperTheta(std::span<const double> theta, double s, int original_context,
                                   double beta_fast, double beta_slow) {
  std::vector<double> scaled(theta.size());
  for (size_t i = 0; i < theta.size(); ++i) {
    const double rotations = original_context * theta[i] / (2.0 * std::numbers::pi);
    const double gamma = std::clamp((rotations - beta_slow) / (beta_fast - beta_slow), 0.0, 1.0);
    scaled[i] = (1.0 - gamma) * theta[i] / s + gamma * theta[i];
  }
  return scaled;
}

// Llama 3.1 (HF `_compute_llama3_parameters`). L = original context,
// low_freq_wavelen = L/low_freq_factor, high_freq_wavelen = L/high_freq_factor,
// wavelen_k = 2π/theta_k:
//   wavelen < high_freq_wavelen  → theta_k                      (high frequency, kept)
//   wavelen > low_freq_wavelen   → theta_k / s                  (low frequency, interpolated)
//   otherwise smooth = (L/wavelen − low_freq_factor)/(high_freq_factor − low_freq_factor),
//                theta'_k = (1 − smooth)·theta_k/s + smooth·theta_k.
// With high_freq_factor == low_freq_factor the middle band is the single wavelength
// L/low_freq_factor, where smooth would be 0/0; it gets theta/s (the smooth = 0 end).
std::vector<double> Llama3Theta(std::span<const double> theta, double s, int original_context,
                                double low_freq_factor, double high_freq_factor) {
  const double context = original_context;
  const double low_freq_wavelen = context / low_freq_factor;
  const double high_freq_wavelen = context / high_freq_factor;
  std::vector<double> scaled(theta.size());
  for (size_t k = 0; k < theta.size(); ++k) {
    const double wavelen = 2.0 * std::numbers::pi / theta[k];
    if (wavelen < high_freq_wavelen) {
      scaled[k] = theta[k];
    } else if (wavelen > low_freq_wavelen) {
      scaled[k] = theta[k] / s;
    } else if (high_freq_factor == low_freq_factor) {
      scaled[k] = theta[k] / s;
    } else {
      const double smooth = (context / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor);
      scaled[k] = (1.0 - smooth) * theta[k] / s + smooth * theta[k];
    }
  }
  return scaled;
}

// NTK-RoPE-mixed (seed 004, eq. 7): theta_m = n / (β^(m−1)·λ_1⋯λ_m), β = b^(2/d),
// m = 1 … d/2 counting digits from the fastest. Our pair k = m − 1, so
//   theta'_k = theta_k / (λ_1⋯λ_{k+1}) = theta_k / exp(a·(k + 1)^b).
std::vector<double> NtkMixedTheta(std::span<const double> theta, double s, int rotary_dim, double b) {
  const std::vector<double> lambdas = NtkMixedLambdas(rotary_dim, s, b);
  std::vector<double> scaled(theta.size());
  double product = 1.0;  // λ_1⋯λ_{k+1}
  for (size_t k = 0; k < theta.size(); ++k) {
    product *= lambdas[k];
    scaled[k] = theta[k] / product;
  }
  return scaled;
}

}  // namespace

double NtkAwareBase(double base, double s, int rotary_dim, bool exact) {
  if (!exact || rotary_dim <= 2) return base * s;
  const double exponent = static_cast<double>(rotary_dim) / (rotary_dim - 2);
  return base * std::pow(s, exponent);
}

double DynamicNtkBase(double base, double s, int rotary_dim, int current_length,
                      int original_context) {
  if (current_length <= original_context) return base;
  const double alpha = s * current_length / original_context - (s - 1.0);
  if (rotary_dim <= 2) return base * alpha;
  const double exponent = static_cast<double>(rotary_dim) / (rotary_dim - 2);
  return base * std::pow(alpha, exponent);
}

// dim(β) = d·ln(L/(β·2π)) / (2·ln b): the pair index whose wavelength 2π/theta fits
// β times into L (solve L·b^(−2i/d) = β·2π for i).
std::pair<double, double> YarnCorrectionDims(int rotary_dim, double base, int original_context,
                                             double beta_fast, double beta_slow) {
  const auto correction_dim = [&](double rotations) {
    return rotary_dim * std::log(original_context / (rotations * 2.0 * std::numbers::pi)) /
           (2.0 * std::log(base));
  };
  const double low = std::floor(correction_dim(beta_fast));
  const double high = std::ceil(correction_dim(beta_slow));
  return {std::max(low, 0.0), std::min(high, static_cast<double>(rotary_dim - 1))};
}

// cumulative(m) = a·m^b for m ≥ 1, cumulative(0) = 0 (the empty product; written out
// so that b = 0 does not read 0^0 = 1); λ_m = exp(cumulative(m) − cumulative(m − 1)).
std::vector<double> NtkMixedLambdas(int rotary_dim, double s, double b) {
  const int pairs = rotary_dim / 2;
  std::vector<double> lambdas(static_cast<size_t>(std::max(pairs, 0)));
  if (pairs <= 0) return lambdas;
  const double a = std::log(s) / std::pow(static_cast<double>(pairs), b);
  const auto cumulative = [&](int m) { return m == 0 ? 0.0 : a * std::pow(static_cast<double>(m), b); };
  for (int m = 1; m <= pairs; ++m) {
    lambdas[m - 1] = std::exp(cumulative(m) - cumulative(m - 1));
  }
  return lambdas;
}

RopeFrequencies Frequencies(const RopeSpec& spec, int rotary_dim, int current_length) {
  const double s = spec.factor;
  const std::vector<double> theta = BaseFrequencies(spec.base, rotary_dim);
  RopeFrequencies result;
  switch (spec.scaling) {
    case RopeScaling::kNone:
      result.theta = theta;
      break;
    case RopeScaling::kLinear:
      result.theta = LinearTheta(theta, s);
      break;
    case RopeScaling::kNtkAware:
      result.theta = BaseFrequencies(NtkAwareBase(spec.base, s, rotary_dim, spec.ntk_exact_exponent), rotary_dim);
      break;
    case RopeScaling::kDynamicNtk:
      result.theta = BaseFrequencies(
          DynamicNtkBase(spec.base, s, rotary_dim, current_length, spec.original_context), rotary_dim);
      break;
    case RopeScaling::kYarn:
      result.theta = YarnTheta(theta, s, rotary_dim, spec.base, spec.original_context, spec.beta_fast,
                               spec.beta_slow);
      result.mscale = YarnMscale(s, spec.attn_factor);
      break;
    case RopeScaling::kYarnPaper:
      result.theta = YarnPaperTheta(theta, s, spec.original_context, spec.beta_fast, spec.beta_slow);
      result.mscale = YarnMscale(s, spec.attn_factor);
      break;
    case RopeScaling::kLlama3:
      result.theta = Llama3Theta(theta, s, spec.original_context, spec.low_freq_factor, spec.high_freq_factor);
      break;
    case RopeScaling::kNtkMixed:
      result.theta = NtkMixedTheta(theta, s, rotary_dim, spec.mixed_b);
      break;
    default:
      throw std::invalid_argument("rope_scaling: unknown scaling");
  }
  return result;
}

}  // namespace attncheck::reference
