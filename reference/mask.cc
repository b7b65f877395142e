// Visibility → mask conventions (DESIGN §2, §5): additive fills as stored in the
// dtype (torch.finfo(dtype).min for "lowest"; −1e9 overflows to −inf in f16),
// bool visible / blocked polarity, and the causal-flag patterns (top-left j ≤ i,
// bottom-right j ≤ i + Tk − Tq, as in FlashAttention ≥ 2.1 / SDPA is_causal).
#include "reference/mask.h"

#include <limits>

#include <Eigen/Core>

#include "reference/data.h"

namespace attncheck::reference {

namespace {

// torch.finfo(dtype).min: f32 −3.4028235e38, f16 −65504, bf16 −3.3895314e38.
double LowestFinite(Dtype dtype) {
  switch (dtype) {
    case Dtype::kF32:
      return static_cast<double>(std::numeric_limits<float>::lowest());
    case Dtype::kF16:
      return static_cast<double>(static_cast<float>(std::numeric_limits<Eigen::half>::lowest()));
    case Dtype::kBf16:
      return static_cast<double>(static_cast<float>(std::numeric_limits<Eigen::bfloat16>::lowest()));
  }
  return -std::numeric_limits<double>::infinity();
}

}  // namespace

// Non-additive conventions have no fill; they block with −inf semantics.
double AdditiveFill(MaskConvention m, Dtype dtype) {
  switch (m) {
    case MaskConvention::kAdditiveLowest:
      return LowestFinite(dtype);
    case MaskConvention::kAdditiveMinus1e4:
      return RoundTo(dtype, -1e4);
    case MaskConvention::kAdditiveMinus1e9:
      return RoundTo(dtype, -1e9);
    default:
      return -std::numeric_limits<double>::infinity();
  }
}

std::vector<float> ToAdditive(const std::vector<uint8_t>& visible, MaskConvention m, Dtype dtype) {
  const float fill = static_cast<float>(AdditiveFill(m, dtype));  // exact: every fill is a float
  std::vector<float> additive(visible.size());                    // [B, Tq, Tk]
  for (size_t n = 0; n < visible.size(); ++n) additive[n] = visible[n] != 0 ? 0.0f : fill;
  return additive;
}

// kBoolBlocked inverts (1 = masked); every other convention gets 1 = may attend.
std::vector<uint8_t> ToBool(const std::vector<uint8_t>& visible, MaskConvention m) {
  const bool blocked = m == MaskConvention::kBoolBlocked;
  std::vector<uint8_t> mask(visible.size());  // [B, Tq, Tk]
  for (size_t n = 0; n < visible.size(); ++n) {
    const bool is_visible = visible[n] != 0;
    mask[n] = (blocked ? !is_visible : is_visible) ? 1 : 0;
  }
  return mask;
}

// kCausalTopLeft → j ≤ i; every other convention → bottom-right j ≤ i + Tk − Tq.
std::vector<uint8_t> CausalFlagPattern(MaskConvention m, int tq, int tk) {
  const int offset = m == MaskConvention::kCausalTopLeft ? 0 : tk - tq;
  std::vector<uint8_t> pattern(static_cast<size_t>(tq) * tk, 0);  // [Tq, Tk]
  for (int i = 0; i < tq; ++i) {
    for (int j = 0; j < tk; ++j) pattern[static_cast<size_t>(i) * tk + j] = j <= i + offset ? 1 : 0;
  }
  return pattern;
}

}  // namespace attncheck::reference
