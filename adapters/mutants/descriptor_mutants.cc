// Mutants of descriptor handling (issue: structured visibility): the eigen kernel
// given only the visibility descriptor (masks = {descriptor}, FlashAttention's
// padded-batch forms), each with one slip in reading it, modelled on shipped bugs
// (adapters/descriptor_rule.h DescriptorSlips), plus softcap applied after the mask.
// They see what a real kernel sees: the descriptor, never the case's visibility.
#include <cmath>

#include "adapters/eigen/eigen_adapter.h"
#include "adapters/mutants/mutant_base.h"

namespace attncheck::mutants {
namespace {

// The kernel behind a descriptor; the defect's slip switched on when defective.
class DescriptorMutant : public MutantAdapter {
 public:
  explicit DescriptorMutant(adapters::DescriptorSlips slips = {}) : slips_(slips) {}

 protected:
  void Adjust(Capabilities& caps) const override {
    caps.masks = {MaskConvention::kDescriptor};
    caps.descriptor_forms = adapters::PaddedDescriptorForms();
    caps.queries_beyond_keys = true;  // the descriptor's diagonal d(i) = i + nk − nq may be < 0
  }
  std::vector<float> ConvertMask(const Call&, const MaskArgs& mask, size_t size) const override {
    return EigenAdditiveMask(mask, size, slips_);
  }

 private:
  adapters::DescriptorSlips slips_;
};

template <auto Slip>
class Slipped final : public DescriptorMutant {
 public:
  Slipped() : DescriptorMutant(Slip()) {}
};

// A kernel taking used key lengths but no left padding (ONNX Runtime's seqlens_k,
// flash_attn_with_kvcache without cache_leftpad): a left-padded row reaches it with
// its keys at slot 0 (the ragged layout, reference::KeysCompacted).
template <auto Slip>
class SlippedNoLeftpad final : public DescriptorMutant {
 public:
  SlippedNoLeftpad() : DescriptorMutant(Slip()) {}

 protected:
  void Adjust(Capabilities& caps) const override {
    DescriptorMutant::Adjust(caps);
    caps.descriptor_forms.leftpad_k = false;
  }
};

adapters::DescriptorSlips WindowLeftAsKeys() { return {.window_left_as_keys = true}; }
adapters::DescriptorSlips CausalPerTile() { return {.causal_tile = 16}; }
adapters::DescriptorSlips SequsedKIgnored() { return {.seqused_k_ignored = true}; }
adapters::DescriptorSlips LeftpadKIgnored() { return {.leftpad_k_ignored = true}; }
adapters::DescriptorSlips TopLeft() { return {.top_left = true}; }
adapters::DescriptorSlips OffsetClamped() { return {.offset_clamped = true}; }
adapters::DescriptorSlips WindowRightDropped() { return {.window_right_dropped = true}; }
adapters::DescriptorSlips OffsetFromExtents() { return {.offset_from_extents = true}; }

// Softcap applied to the masked score: a blocked key's −inf becomes
// softcap·tanh(−inf) = −softcap, a finite score that takes weight.
class SoftcapAfterMask final : public DescriptorMutant {
  void AttendHead(const Head& a) override {
    if (!(a.softcap > 0.0f)) return MutantAdapter::AttendHead(a);
    // The kernel adds the mask after softcapping: a blocked entry m' with
    // softcap(s) + m' = −softcap.
    std::vector<float> mask(a.mask, a.mask + static_cast<size_t>(a.tq) * a.tk);
    for (int i = 0; i < a.tq; ++i)
      for (int j = 0; j < a.tk; ++j) {
        float& m = mask[static_cast<size_t>(i) * a.tk + j];
        if (!std::isinf(m)) continue;
        float dot = 0.0f;
        for (int d = 0; d < a.head_dim; ++d)
          dot += a.q[static_cast<size_t>(i) * a.head_dim + d] * a.k[static_cast<size_t>(j) * a.head_dim + d];
        m = -a.softcap - a.softcap * std::tanh(dot * a.scale / a.softcap);
      }
    Head capped = a;
    capped.mask = mask.data();
    MutantAdapter::AttendHead(capped);
  }
};

}  // namespace

std::vector<MutantDef> DescriptorMutants() {
  return {
      Def<Slipped<WindowLeftAsKeys>>("desc-window-w-as-left",
                                     "descriptor window (W - 1, 0) read as W keys back: admits W + 1 keys",
                                     {"non-interference"}),
      Def<Slipped<CausalPerTile>>("desc-causal-per-tile",
                                  "causality decided per 16 x 16 tile, not per token: keys past the diagonal in "
                                  "the diagonal tile are read",
                                  {"non-interference"}),
      Def<Slipped<SequsedKIgnored>>("desc-seqused-k-ignored", "seqused_k ignored: right-padded key slots are read",
                                    {"non-interference", "left-padding"}),
      Def<Slipped<LeftpadKIgnored>>("desc-leftpad-k-ignored",
                                    "leftpad_k ignored: left-padded key slots are read and the diagonal shifts",
                                    {"non-interference", "left-padding"}),
      Def<Slipped<TopLeft>>("desc-top-left",
                            "causal diagonal aligned top-left although the descriptor says bottom-right",
                            {"decode-consistency"}),
      Def<Slipped<OffsetClamped>>("desc-offset-clamped",
                                  "bottom-right offset nk - nq clamped at 0 (as an unsigned past length would be): "
                                  "with Tq > Tk the rows align top-left and read keys before their diagonal",
                                  {"non-interference", "reference-agreement", "masked-rows"}),
      Def<Slipped<WindowRightDropped>>("desc-window-right-dropped",
                                       "a two-sided window (left, right) read without its right bound: every "
                                       "later key of the sequence is read (a causal-only window path)",
                                       {"non-interference"}),
      Def<SlippedNoLeftpad<OffsetFromExtents>>(
          "desc-offset-from-extents",
          "bottom-right offset taken from the padded extents Tk - Tq, not the row's nk - nq: equal on every "
          "right-padded row (as many pad queries as pad keys), wrong once a row's keys start at slot 0 with "
          "fewer than Tk of them (the ragged decoding layout)",
          {"non-interference", "reference-agreement"}),
      Def<SoftcapAfterMask>("desc-softcap-after-mask",
                            "softcap applied after the mask: a blocked key's score becomes -softcap and takes weight",
                            {"non-interference", "masked-rows"}),
  };
}

}  // namespace attncheck::mutants
