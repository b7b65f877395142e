// RoPE mutants: the eigen kernel's rotation with one classic mistake, applied
// wherever the kernel rotates (attention, the cached-decode session and the
// rotation stage) unless the mistake lives elsewhere (rope-on-value rotates V
// inside attention only). Each lists encodings {rope} and, where the mistake
// belongs to one scaling, only that scaling, so every drawn case can show it.
#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <Eigen/Core>

#include "adapters/mutants/mutant_base.h"
#include "reference/rope_scaling.h"

namespace attncheck::mutants {
namespace {

class RopeMutant : public MutantAdapter {
 protected:
  void Adjust(Capabilities& caps) const override {
    caps.encodings = {EncodingKind::kRope};
    AdjustRope(caps);
  }
  virtual void AdjustRope(Capabilities&) const {}
  // The base rotation with the spec changed.
  void RotateAs(const KernelSpec& c, int current_length, std::span<float> x, int batch, int heads, int tokens,
                std::span<const int> positions, bool query) {
    MutantAdapter::Rotate(c, current_length, x, batch, heads, tokens, positions, query);
  }
};

// Interleaved pairs where half-split is declared, and vice versa.
class RopeLayoutSwap final : public RopeMutant {
  void Rotate(const KernelSpec& c, int length, std::span<float> x, int batch, int heads, int tokens,
              std::span<const int> positions, bool query) override {
    KernelSpec swapped = c;
    swapped.encoding.rope.layout =
        c.encoding.rope.layout == RopeLayout::kHalfSplit ? RopeLayout::kInterleaved : RopeLayout::kHalfSplit;
    RotateAs(swapped, length, x, batch, heads, tokens, positions, query);
  }
};

// V rotated like K. The rotation is fused into attention (no rotation stage), so
// the rope-relative law shifts positions through attention itself.
class RopeOnValue final : public RopeMutant {
  void AdjustRope(Capabilities& caps) const override {
    caps.has_rope_stage = false;
    caps.value_dim_differs = false;  // V rotates with K's pairs
    caps.rope_scalings = {RopeScaling::kNone, RopeScaling::kLinear, RopeScaling::kNtkAware, RopeScaling::kYarn,
                          RopeScaling::kLlama3, RopeScaling::kNtkMixed};
  }
  void TransformValues(const KernelSpec& c, int length, std::vector<float>& v, const Inputs& in, int keys,
                       std::span<const int> key_positions) override {
    if (!in.apply_positional) return;
    RotateAs(c, length, v, in.batch, in.kv_heads, keys, key_positions, false);
  }
};

// The rotary dim is ignored: every head dim rotates (with head-dim frequencies).
class RopePartialAllDims final : public RopeMutant {
  void Rotate(const KernelSpec& c, int length, std::span<float> x, int batch, int heads, int tokens,
              std::span<const int> positions, bool query) override {
    KernelSpec full = c;
    full.encoding.rope.rotary_dim = 0;
    RotateAs(full, length, x, batch, heads, tokens, positions, query);
  }
};

// The eigen rotation with the angle p·θ computed in bfloat16 (p, θ and their
// product each rounded to bf16), as a kernel that keeps its angle table in bf16.
class RopeAngleLowPrecision final : public RopeMutant {
  void Rotate(const KernelSpec& c, int length, std::span<float> x, int batch, int heads, int tokens,
              std::span<const int> positions, bool query) override {
    const RopeSpec& spec = c.encoding.rope;
    const int rotary_dim = c.rotary_dim(), half = rotary_dim / 2, head_dim = c.head_dim;
    const reference::RopeFrequencies frequencies = reference::Frequencies(spec, rotary_dim, length);
    const float mscale = static_cast<float>(frequencies.mscale);
    for (int b = 0; b < batch; ++b)
      for (int h = 0; h < heads; ++h)
        for (int t = 0; t < tokens; ++t) {
          const int position = positions[static_cast<size_t>(b) * tokens + t];
          float* row = x.data() + ((static_cast<size_t>(b) * heads + h) * tokens + t) * head_dim;
          const Eigen::bfloat16 p(static_cast<float>(position));
          for (int k = 0; k < half; ++k) {
            const int a = spec.layout == RopeLayout::kInterleaved ? 2 * k : k;
            const int e = spec.layout == RopeLayout::kInterleaved ? 2 * k + 1 : k + half;
            const Eigen::bfloat16 theta(static_cast<float>(frequencies.theta[static_cast<size_t>(k)]));
            const float angle = static_cast<float>(Eigen::bfloat16(p * theta));  // the defect
            const float cos_angle = std::cos(angle) * mscale, sin_angle = std::sin(angle) * mscale;
            const float x_a = row[a], x_b = row[e];
            row[a] = x_a * cos_angle - x_b * sin_angle;
            row[e] = x_a * sin_angle + x_b * cos_angle;
          }
          if (query && spec.log_n) {
            const float scale = static_cast<float>(reference::LogNScale(position, spec.original_context));
            for (int d = 0; d < head_dim; ++d) row[d] *= scale;
          }
        }
  }
};

// NTK-aware base b·s where the case asks for the exact b·s^(d/(d−2)).
class NtkBaseExponent final : public RopeMutant {
  void AdjustRope(Capabilities& caps) const override { caps.rope_scalings = {RopeScaling::kNtkAware}; }
  void Rotate(const KernelSpec& c, int length, std::span<float> x, int batch, int heads, int tokens,
              std::span<const int> positions, bool query) override {
    KernelSpec inexact = c;
    inexact.encoding.rope.ntk_exact_exponent = false;
    RotateAs(inexact, length, x, batch, heads, tokens, positions, query);
  }
};

// YaRN without its magnitude factor (mscale 1 on cos and sin).
class YarnNoMscale final : public RopeMutant {
  void AdjustRope(Capabilities& caps) const override { caps.rope_scalings = {RopeScaling::kYarn}; }
  void Rotate(const KernelSpec& c, int length, std::span<float> x, int batch, int heads, int tokens,
              std::span<const int> positions, bool query) override {
    KernelSpec unscaled = c;
    unscaled.encoding.rope.attn_factor = 1.0;  // YarnMscale returns attn_factor when > 0
    RotateAs(unscaled, length, x, batch, heads, tokens, positions, query);
  }
};

// Dynamic NTK whose base is cached from the longest sequence this adapter has
// seen: state that outlives the call.
class DynamicNtkSticky final : public RopeMutant {
  void AdjustRope(Capabilities& caps) const override { caps.rope_scalings = {RopeScaling::kDynamicNtk}; }
  void Rotate(const KernelSpec& c, int length, std::span<float> x, int batch, int heads, int tokens,
              std::span<const int> positions, bool query) override {
    longest_ = std::max(longest_, length);
    RotateAs(c, longest_, x, batch, heads, tokens, positions, query);
  }
  int longest_ = 0;
};

}  // namespace

std::vector<MutantDef> RopeMutants() {
  return {
      Def<RopeLayoutSwap>("rope-layout-swap", "RoPE pairs interleaved where half-split is declared, and vice versa",
                          {"rope-relative"}),
      Def<RopeOnValue>("rope-on-value", "RoPE applied to V as well as Q and K", {"rope-relative", "reference-agreement"}),
      Def<RopePartialAllDims>("rope-partial-all-dims", "partial rotary ignored: every head dim is rotated",
                              {"rope-relative"}),
      Def<RopeAngleLowPrecision>("rope-angle-low-precision", "RoPE angles p*theta computed in bf16",
                                 {"rope-relative"}),
      Def<NtkBaseExponent>("ntk-base-exponent", "NTK-aware base b*s instead of the exact b*s^(d/(d-2))",
                           {"rope-relative"}),
      Def<YarnNoMscale>("yarn-no-mscale", "YaRN magnitude factor (0.1 ln s + 1) dropped", {"rope-relative"}),
      Def<DynamicNtkSticky>("dynamic-ntk-sticky",
                            "dynamic-NTK base kept from the longest sequence seen so far (state across calls)",
                            {"decode-consistency"}),
  };
}

}  // namespace attncheck::mutants
