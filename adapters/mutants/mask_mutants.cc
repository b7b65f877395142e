// Mask mutants: a kernel that rebuilds its mask from the one it is handed (a
// dense mask or the padded-batch descriptor, read into Call::Given) with one
// classic mistake in the relation V = K_valid ∧ same_doc ∧ G. It knows only what
// the mask shows: a key no query sees is padding, a query that sees nothing is
// one, and the rows of neighbouring queries. They list encodings {none, rope}:
// no score bias is folded into the mask they rebuild.
#include "adapters/mutants/mutant_base.h"

namespace attncheck::mutants {
namespace {

class OwnMaskMutant : public MutantAdapter {
 protected:
  bool OwnsMask() const override { return true; }
};

// The mask read transposed over the square block of the queries: query i sees
// key j when query j sees key i, so the causal triangle flips (tril → triu).
class CausalAxisSwap final : public OwnMaskMutant {
  bool Visible(const Call& call, int b, int qs, int ks) const override {
    return call.IsQuery(ks) ? call.Given(b, ks, qs) : call.Given(b, qs, ks);
  }
};

// The causal part admits one key too many: key i + 1 is visible to query i
// wherever that key sees query i's own slot (a real key of the same document,
// inside the causal pattern).
class CausalOffByOne final : public OwnMaskMutant {
  bool Visible(const Call& call, int b, int qs, int ks) const override {
    if (call.Given(b, qs, ks)) return true;
    return ks == qs + 1 && call.Given(b, ks, ks) && call.Given(b, ks, qs);
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

// In a decode call (tq < keys) the mask is aligned top-left: query i reads the
// columns of keys j + (keys − tq), so it sees key j where it should see key
// j + past (causal j ≤ i instead of j ≤ i + past).
class TopLeftCausalDecode final : public OwnMaskMutant {
  bool Visible(const Call& call, int b, int qs, int ks) const override {
    return call.Given(b, qs, ks + (call.keys - call.tq));
  }
};

// The explicit mask (already causal, bottom-right) and the kernel's causal flag
// (top-left j ≤ i) are both applied.
class DoubleCausal final : public OwnMaskMutant {
  bool Visible(const Call& call, int b, int qs, int ks) const override {
    const int i = qs - (call.keys - call.tq);
    return call.Given(b, qs, ks) && ks <= i;
  }
};

// The key-padding mask is dropped: pad keys (those no query sees) are visible to
// every real query.
class PadKeysVisible final : public OwnMaskMutant {
  bool Visible(const Call& call, int b, int qs, int ks) const override {
    if (call.KeyUsed(b, ks)) return call.Given(b, qs, ks);
    return call.QueryReal(b, qs);
  }
};

// Packed documents under a plain causal mask built from key padding alone: every
// real key at or before a real query is visible, across documents.
class PackedNoBoundary final : public OwnMaskMutant {
  bool Visible(const Call& call, int b, int qs, int ks) const override {
    if (call.Given(b, qs, ks)) return true;
    return ks <= qs && call.KeyUsed(b, ks) && call.QueryReal(b, qs);
  }
};

// Prefix-LM with the suffix bidirectional too: in a row whose mask shows a prefix
// (some query sees a later key) the mask is made symmetric, so every token sees
// its whole document.
class PrefixLmSuffixBidirectional final : public OwnMaskMutant {
  static bool ShowsPrefix(const Call& call, int b) {
    for (int i = 0; i < call.tq; ++i)
      for (int ks = call.query_slot(i) + 1; ks < call.keys; ++ks)
        if (call.Given(b, call.query_slot(i), ks)) return true;
    return false;
  }
  bool Visible(const Call& call, int b, int qs, int ks) const override {
    if (call.Given(b, qs, ks)) return true;
    return ks > qs && call.Given(b, ks, qs) && ShowsPrefix(call, b);
  }
};

// Sliding window i − j ≤ W: W + 1 keys including self — a query also sees the
// keys its predecessor in the same document sees.
class WindowPlusOne final : public OwnMaskMutant {
  bool Visible(const Call& call, int b, int qs, int ks) const override {
    if (call.Given(b, qs, ks)) return true;
    return ks < qs && call.Given(b, qs, qs - 1) && call.Given(b, qs - 1, ks);
  }
};

}  // namespace

std::vector<MutantDef> MaskMutants() {
  return {
      Def<CausalAxisSwap>("causal-axis-swap",
                          "causal mask transposed: key j visible when j >= i instead of j <= i (query j sees key i)",
                          {"non-interference"}),
      Def<CausalOffByOne>("causal-off-by-one", "causal mask off by one: key j visible when j <= i + 1",
                          {"non-interference"}),
      Def<BoolPolarity>("bool-polarity", "a bool-visible mask is read as bool-blocked (true = masked out)",
                        {"mask-conventions", "non-interference"}),
      Def<TopLeftCausalDecode>("topleft-causal-decode",
                               "decode calls (Tq < Tk) align causal top-left (j <= i) instead of bottom-right",
                               {"decode-consistency", "non-interference", "reference-agreement"}),
      Def<PadKeysVisible>("pad-keys-visible", "the key-padding mask is ignored: pad keys are attended",
                          {"non-interference", "left-padding", "masked-rows"}),
      Def<PackedNoBoundary>("packed-no-boundary",
                            "packed documents under a plain causal padding mask: tokens attend across documents",
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
