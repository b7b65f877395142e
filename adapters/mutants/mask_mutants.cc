// Mask mutants: a kernel that builds its own mask from the layout (as a model's
// mask code does from attention_mask, doc ids and the task), each with one classic
// mistake in the relation V = K_valid ∧ same_doc ∧ G. The harness's mask is ignored,
// so only the mistake separates them from the eigen adapter. They list encodings
// {none, rope}: no score bias is folded into the mask they ignore.
#include "adapters/mutants/mutant_base.h"
#include "reference/visibility.h"

namespace attncheck::mutants {
namespace {

class OwnMaskMutant : public MutantAdapter {
 protected:
  bool OwnsMask() const override { return true; }
};

bool HasCausalPart(const Case& c) { return c.visibility != VisibilityKind::kBidirectional; }

// G with the query and key roles exchanged: tril becomes triu (j ≥ i).
class CausalAxisSwap final : public OwnMaskMutant {
  bool Visible(const Call& call, int b, int qs, int ks) const override {
    return SameDocument(call, b, qs, ks) &&
           reference::TaskVisible(*call.c, call.row(b).prefix_len, ks, qs, call.pos_in_doc(b, ks),
                                  call.pos_in_doc(b, qs));
  }
};

// The causal part admits one key too many: j ≤ i + 1.
class CausalOffByOne final : public OwnMaskMutant {
  bool Visible(const Call& call, int b, int qs, int ks) const override {
    if (CorrectVisible(call, b, qs, ks)) return true;
    return ks == qs + 1 && HasCausalPart(*call.c) && SameDocument(call, b, qs, ks) &&
           reference::TaskVisible(*call.c, call.row(b).prefix_len, qs + 1, ks, call.pos_in_doc(b, qs),
                                  call.pos_in_doc(b, ks));
  }
};

// The harness's mask, but a bool-visible one is read with bool-blocked polarity.
class BoolPolarity final : public MutantAdapter {
  void Adjust(Capabilities& caps) const override {
    caps.masks = {MaskConvention::kBoolVisible, MaskConvention::kBoolBlocked, MaskConvention::kAdditiveNegInf};
  }
  std::vector<float> ConvertMask(const Call& call, const MaskArgs& mask, size_t size) const override {
    if (mask.convention != MaskConvention::kBoolVisible) return MutantAdapter::ConvertMask(call, mask, size);
    MaskArgs misread = mask;
    misread.convention = MaskConvention::kBoolBlocked;
    return MutantAdapter::ConvertMask(call, misread, size);
  }
};

// In a decode call (tq < keys) the causal part is aligned top-left: query index
// i instead of its slot keys − tq + i.
class TopLeftCausalDecode final : public OwnMaskMutant {
  bool Visible(const Call& call, int b, int qs, int ks) const override {
    if (call.tq >= call.keys) return CorrectVisible(call, b, qs, ks);
    const int i = qs - (call.keys - call.tq);
    return SameDocument(call, b, qs, ks) &&
           reference::TaskVisible(*call.c, call.row(b).prefix_len, i, ks, call.pos_in_doc(b, qs),
                                  call.pos_in_doc(b, ks));
  }
};

// The explicit mask (already causal, bottom-right) and the kernel's causal flag
// (top-left j ≤ i) are both applied.
class DoubleCausal final : public OwnMaskMutant {
  bool Visible(const Call& call, int b, int qs, int ks) const override {
    const int i = qs - (call.keys - call.tq);
    return CorrectVisible(call, b, qs, ks) && ks <= i;
  }
};

// The key-padding mask is dropped: pad keys are visible wherever G allows.
class PadKeysVisible final : public OwnMaskMutant {
  bool Visible(const Call& call, int b, int qs, int ks) const override {
    if (call.valid(b, ks)) return CorrectVisible(call, b, qs, ks);
    return RealQuery(call, b, qs) &&
           reference::TaskVisible(*call.c, call.row(b).prefix_len, qs, ks, call.pos_in_doc(b, qs), -1);
  }
};

// Packed documents under the plain task mask: no same-document term.
class PackedNoBoundary final : public OwnMaskMutant {
  bool Visible(const Call& call, int b, int qs, int ks) const override {
    return RealQuery(call, b, qs) && call.valid(b, ks) && Task(call, b, qs, ks);
  }
};

// Prefix-LM with the suffix bidirectional too: the whole document sees itself.
class PrefixLmSuffixBidirectional final : public OwnMaskMutant {
  bool Visible(const Call& call, int b, int qs, int ks) const override {
    if (call.c->visibility != VisibilityKind::kPrefixLm) return CorrectVisible(call, b, qs, ks);
    return SameDocument(call, b, qs, ks);
  }
};

// Sliding window i − j ≤ W: W + 1 keys including self.
class WindowPlusOne final : public OwnMaskMutant {
  bool Visible(const Call& call, int b, int qs, int ks) const override {
    if (call.c->visibility != VisibilityKind::kSlidingWindow) return CorrectVisible(call, b, qs, ks);
    return SameDocument(call, b, qs, ks) && ks <= qs && qs - ks <= call.c->window;
  }
};

}  // namespace

std::vector<MutantDef> MaskMutants() {
  return {
      Def<CausalAxisSwap>("causal-axis-swap", "causal mask transposed: key j visible when j >= i instead of j <= i",
                          {"non-interference"}),
      Def<CausalOffByOne>("causal-off-by-one", "causal mask off by one: key j visible when j <= i + 1",
                          {"non-interference"}),
      Def<BoolPolarity>("bool-polarity", "a bool-visible mask is read as bool-blocked (true = masked out)",
                        {"mask-conventions", "non-interference"}),
      Def<TopLeftCausalDecode>("topleft-causal-decode",
                               "decode calls (Tq < Tk) align causal top-left (j <= i) instead of bottom-right",
                               {"decode-consistency", "reference-agreement"}),
      Def<PadKeysVisible>("pad-keys-visible", "the key-padding mask is ignored: pad keys are attended",
                          {"non-interference", "left-padding", "masked-rows"}),
      Def<PackedNoBoundary>("packed-no-boundary",
                            "packed documents under the plain task mask: tokens attend across documents",
                            {"packed-isolation", "non-interference"}),
      Def<PrefixLmSuffixBidirectional>("prefixlm-suffix-bidirectional",
                                       "prefix-LM with a bidirectional suffix: suffix tokens see later tokens",
                                       {"non-interference"}),
      Def<WindowPlusOne>("window-plus-one", "sliding window admits W + 1 keys (i - j <= W)", {"non-interference"}),
      Def<DoubleCausal>("double-causal",
                        "explicit causal mask and the kernel's top-left causal flag both applied (diagonal shifts)",
                        {"decode-consistency", "reference-agreement"}),
  };
}

}  // namespace attncheck::mutants
