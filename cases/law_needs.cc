// Intersecting an adapter's capabilities with a law's needs (cases/law_needs.h):
// each need removes what cannot meet it, and an empty intersection names why.
#include "cases/law_needs.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace attncheck {
namespace {

template <class T, class Keep>
void KeepOnly(std::vector<T>& values, Keep keep) {
  std::erase_if(values, [&](const T& v) { return !keep(v); });
}

std::string EncodingNames(std::span<const EncodingKind> kinds) {
  std::vector<std::string_view> names;
  for (EncodingKind k : kinds) names.push_back(Name(k));
  return fmt::format("{}", fmt::join(names, " or "));
}

}  // namespace

std::optional<Capabilities> NarrowToNeeds(const Capabilities& caps, const LawNeeds& needs, std::string* why) {
  Capabilities out = caps;
  auto fail = [&](std::string reason) -> std::optional<Capabilities> {
    if (why) *why = std::move(reason);
    return std::nullopt;
  };
  if (!needs.encodings.empty()) {
    KeepOnly(out.encodings, [&](EncodingKind k) { return std::ranges::count(needs.encodings, k) > 0; });
    if (out.encodings.empty()) return fail(fmt::format("adapter accepts no {} encoding", EncodingNames(needs.encodings)));
  }
  if (needs.backward) {
    if (!caps.has_backward) return fail("adapter has no backward pass");
    out.descriptor_forms.varlen = out.descriptor_forms.paged = false;
    out.descriptor_forms.page_size = 0;
    out.descriptor_forms.more_page_sizes.clear();
  }
  if (needs.precise_forward && std::ranges::any_of(caps.dtypes, [](Dtype d) { return d != Dtype::kBf16; })) {
    KeepOnly(out.dtypes, [](Dtype d) { return d != Dtype::kBf16; });
  }
  if (needs.own_rope && !caps.owns_rope && !caps.has_rope_stage) {
    return fail("adapter does not apply RoPE (the harness applies the reference)");
  }
  if (needs.fixed_rope_frequencies && !caps.has_rope_stage) {
    KeepOnly(out.rope_scalings, [](RopeScaling s) { return s != RopeScaling::kDynamicNtk; });
    if (out.rope_scalings.empty()) return fail("adapter accepts only dynamic NTK, which depends on absolute length");
  }
  if (needs.packed_documents) {
    const bool varlen = caps.descriptor_forms.varlen;
    KeepOnly(out.masks, [varlen](MaskConvention m) {
      return !IsCausalFlag(m) && (m != MaskConvention::kDescriptor || varlen);
    });
    if (out.masks.empty()) {
      return fail("adapter accepts only causal flags or a padded-batch descriptor, which cannot express packed documents");
    }
    if (std::min(caps.max_tokens, caps.max_position + 1) < kMinPackedLength) {
      return fail("adapter's rows are too short to pack two documents");
    }
  }
  if (needs.grouped_heads) {
    if (!caps.gqa) return fail("adapter does not support GQA");
    if (caps.max_heads < 2) return fail("adapter accepts one query head: nothing to group");
  }
  if (needs.two_mask_conventions) {
    if (caps.masks.size() < 2) return fail("adapter accepts one mask convention");
    // A causal flag expresses few cases drawn under another convention (one unpadded
    // causal document); every convention expresses one drawn under the top-left
    // flag (Tq = Tk). With fewer than two other conventions, draw under the flags.
    const auto flags = std::ranges::count_if(caps.masks, IsCausalFlag);
    if (caps.masks.size() - static_cast<size_t>(flags) < 2) {
      const bool top_left = std::ranges::count(caps.masks, MaskConvention::kCausalTopLeft) > 0;
      KeepOnly(out.masks, [&](MaskConvention m) { return top_left ? m == MaskConvention::kCausalTopLeft : IsCausalFlag(m); });
    }
    // A score bias reaches a kernel that does not own it only inside an additive mask
    // (harness WhyUnsupported): with fewer than two additive conventions, no two
    // conventions express a biased case, so none is drawn (libtorch-mha: bool-blocked
    // and add-inf skipped 475 of 1000 cases, seed 3, for ALiBi, T5, KERPLE and sandwich).
    const auto unbiased = [](EncodingKind k) { return !IsScoreBiasKind(k); };
    if (!caps.owns_bias && std::ranges::count_if(out.masks, IsAdditive) < 2 &&
        std::ranges::any_of(out.encodings, unbiased)) {
      KeepOnly(out.encodings, unbiased);
    }
  }
  return out;
}

}  // namespace attncheck
