// Numeric and head-mapping mutants: the eigen kernel with one mistake in the
// score bias it owns, the GQA head mapping, the softmax of a fully masked row,
// the f16 mask fill, or the P·V product.
#include <cmath>
#include <limits>

#include <Eigen/Core>

#include "adapters/eigen/eigen_adapter.h"
#include "adapters/mutants/mutant_base.h"
#include "reference/alibi.h"
#include "reference/data.h"
#include "reference/mask.h"

namespace attncheck::mutants {
namespace {

bool RowBlocked(const float* mask_row, int tk) {
  for (int j = 0; j < tk; ++j)
    if (mask_row[j] != kNegInf) return false;
  return true;
}

// Owns ALiBi and computes the slopes itself with the power-of-two rule
// 2^(−8i/n), i = 1 … n, for every head count n (the paper's get_slopes
// interleaves the 2m rule when n is not a power of two). Up to 8 heads, so half
// the drawn head counts are not powers of two.
class AlibiNonPow2Slopes final : public MutantAdapter {
  void Adjust(Capabilities& caps) const override {
    caps.owns_bias = true;
    caps.encodings = {EncodingKind::kAlibi};
    caps.max_heads = 8;
    caps.many_heads = 40;
  }
  double Bias(const KernelSpec& c, int head, int query_pos, int key_pos) const override {
    const double slope = std::exp2(-8.0 * (head + 1) / c.q_heads);
    return reference::AlibiBias(slope, query_pos, key_pos);
  }
};

// GQA kv head h mod Hkv (a tiled mapping) instead of ⌊h / (Hq/Hkv)⌋. Up to 8
// heads, so Hq = 4, 6, 8 have groupings where the two differ.
class GqaTileMapping final : public MutantAdapter {
  void Adjust(Capabilities& caps) const override {
    caps.max_heads = 8;
    caps.many_heads = 40;
  }
  int KvHead(int h, int, int kv_heads) const override { return h % kv_heads; }
};

// Softmax of a row with no visible key: exp(−inf − (−inf)) = NaN, while the
// declared policy is zeros.
class AllMaskedNan final : public MutantAdapter {
  void AttendHead(const Head& a) override {
    MutantAdapter::AttendHead(a);
    for (int i = 0; i < a.tq; ++i) {
      if (!RowBlocked(a.mask + static_cast<size_t>(i) * a.tk, a.tk)) continue;
      for (int d = 0; d < a.value_dim; ++d) a.out[static_cast<size_t>(i) * a.value_dim + d] = std::nanf("");
    }
  }
};

// An f16 kernel that blocks with the lowest finite f16 value and adds its own
// key-padding mask (the keys no query of the call sees, a [B, Tk] attention_mask
// read off the mask it is given) to that mask (HF style), detecting fully masked
// rows as "every entry == lowest" and zeroing them (its declared policy). Its
// fill overflows in f16: a bool mask is filled with −1e30 (−inf in f16), and the
// masks are added in f16, so lowest + lowest = −inf. A fully masked row then
// escapes the detection and softmaxes to NaN.
class AdditiveOverflowF16 final : public MutantAdapter {
  void Adjust(Capabilities& caps) const override {
    caps.dtypes = {Dtype::kF16};
    caps.masks = {MaskConvention::kAdditiveLowest, MaskConvention::kBoolVisible, MaskConvention::kBoolBlocked};
  }
  std::vector<float> ConvertMask(const Call& call, const MaskArgs& mask, size_t size) const override {
    const double lowest = reference::AdditiveFill(MaskConvention::kAdditiveLowest, Dtype::kF16);
    const double fill = reference::RoundTo(Dtype::kF16, -1e30);  // −inf: the overflow
    std::vector<float> combined(size);  // [B, tq, keys], values of f16
    size_t e = 0;
    const int batch = static_cast<int>(size / (static_cast<size_t>(call.tq) * call.keys));
    for (int b = 0; b < batch; ++b)
      for (int i = 0; i < call.tq; ++i)
        for (int j = 0; j < call.keys; ++j, ++e) {
          double given = 0.0;
          if (IsBool(mask.convention)) {
            const bool blocked = (mask.boolean[e] != 0) == (mask.convention == MaskConvention::kBoolBlocked);
            given = blocked ? fill : 0.0;
          } else {
            given = mask.additive[e];
          }
          const double padding = call.KeyUsed(b, j) ? 0.0 : lowest;
          combined[e] = static_cast<float>(reference::RoundTo(Dtype::kF16, given + padding));
        }
    return combined;
  }
  // Per row: every entry == lowest → the guard zeroes it; otherwise blocked
  // entries (≤ lowest) are excluded, except in a row that has nothing else, which
  // a plain softmax spreads over its finite entries (the common fill cancels) or,
  // all −inf, turns into NaN (exp(−inf − (−inf))).
  void AttendHead(const Head& a) override {
    const float lowest = static_cast<float>(reference::AdditiveFill(MaskConvention::kAdditiveLowest, Dtype::kF16));
    std::vector<float> mask(a.mask, a.mask + static_cast<size_t>(a.tq) * a.tk);
    std::vector<float> value(static_cast<size_t>(a.tq), 1.0f);  // 1: attend; 0: guard; NaN
    for (int i = 0; i < a.tq; ++i) {
      float* row = mask.data() + static_cast<size_t>(i) * a.tk;
      bool all_lowest = true, all_neg_inf = true, all_blocked = true;
      for (int j = 0; j < a.tk; ++j) {
        all_lowest = all_lowest && row[j] == lowest;
        all_neg_inf = all_neg_inf && row[j] == kNegInf;
        all_blocked = all_blocked && row[j] <= lowest;
      }
      if (all_lowest) value[i] = 0.0f;
      else if (all_neg_inf) value[i] = std::nanf("");
      for (int j = 0; j < a.tk; ++j) {
        if (row[j] > lowest) continue;
        row[j] = all_blocked && row[j] != kNegInf ? 0.0f : kNegInf;
      }
    }
    MutantAdapter::AttendHead({a.q, a.k, a.v, mask.data(), a.tq, a.tk, a.head_dim, a.value_dim, a.scale, a.softcap,
                               a.out});
    for (int i = 0; i < a.tq; ++i) {
      if (value[i] == 1.0f) continue;
      for (int d = 0; d < a.value_dim; ++d) a.out[static_cast<size_t>(i) * a.value_dim + d] = value[i];
    }
  }
};

// The softmax of the eigen kernel, but O = P·V as a dense product over every key:
// blocked keys enter as 0·V, so a NaN (or inf) in a masked value row leaks.
class MaskedValueZeroTimesNan final : public MutantAdapter {
  void AttendHead(const Head& a) override {
    std::vector<float> scores(static_cast<size_t>(a.tk)), weights(static_cast<size_t>(a.tk));
    for (int i = 0; i < a.tq; ++i) {
      const float* q = a.q + static_cast<size_t>(i) * a.head_dim;
      const float* mask = a.mask + static_cast<size_t>(i) * a.tk;
      float row_max = kNegInf;
      for (int j = 0; j < a.tk; ++j) {
        if (mask[j] == kNegInf) {
          scores[j] = kNegInf;
          continue;
        }
        float dot = 0.0f;
        for (int d = 0; d < a.head_dim; ++d) dot += q[d] * a.k[static_cast<size_t>(j) * a.head_dim + d];
        float s = dot * a.scale;
        if (a.softcap > 0.0f) s = a.softcap * std::tanh(s / a.softcap);
        scores[j] = s + mask[j];
        row_max = std::max(row_max, scores[j]);
      }
      float* out = a.out + static_cast<size_t>(i) * a.value_dim;
      if (!(row_max > kNegInf)) {
        for (int d = 0; d < a.value_dim; ++d) out[d] = 0.0f;
        continue;
      }
      float sum = 0.0f;
      for (int j = 0; j < a.tk; ++j) {
        weights[j] = scores[j] == kNegInf ? 0.0f : std::exp(scores[j] - row_max);
        sum += weights[j];
      }
      for (int d = 0; d < a.value_dim; ++d) {
        float acc = 0.0f;
        for (int j = 0; j < a.tk; ++j) acc += weights[j] * a.v[static_cast<size_t>(j) * a.value_dim + d];  // the defect
        out[d] = acc / sum;
      }
    }
  }
};

}  // namespace

std::vector<MutantDef> NumericMutants() {
  return {
      Def<AlibiNonPow2Slopes>("alibi-nonpow2-slopes",
                              "ALiBi slopes 2^(-8i/n) for every head count (wrong when n is not a power of two)",
                              {"reference-agreement"}),
      Def<GqaTileMapping>("gqa-tile-mapping", "GQA kv head = h mod Hkv instead of h / (Hq/Hkv)", {"gqa"}),
      Def<AllMaskedNan>("allmasked-nan", "a row with no visible key returns NaN while the declared policy is zeros",
                        {"masked-rows"}),
      Def<AdditiveOverflowF16>(
          "additive-overflow-f16",
          "f16 mask fill overflows to -inf (bool fill -1e30, lowest + lowest): fully masked rows NaN, zeros declared",
          {"masked-rows"}),
      Def<MaskedValueZeroTimesNan>("masked-value-zero-times-nan",
                                   "P*V over every key: masked values enter as 0*V, so NaN in a masked V leaks",
                                   {"masked-rows"}),
  };
}

}  // namespace attncheck::mutants
