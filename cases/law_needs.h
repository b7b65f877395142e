// What a law needs of a case (its row of the law table, properties/laws.h), so that
// Decode draws each law's stream inside those needs instead of drawing everything
// and skipping afterwards. NarrowToNeeds intersects them with an adapter's
// Capabilities; the rest are Decode's hooks (cases/decode.h).
#pragma once

#include <optional>
#include <span>
#include <string>

#include "cases/capabilities.h"

namespace attncheck {

struct LawNeeds {
  std::span<const EncodingKind> encodings = {};  // only these encodings (empty: any)
  bool own_rope = false;                // the adapter applies RoPE itself (or has a rotation stage)
  // Without a rotation stage: no dynamic NTK and no log-n (they depend on absolute length).
  bool fixed_rope_frequencies = false;
  bool packed_documents = false;  // a row with ≥ 2 non-empty documents (no causal-flag mask)
  bool grouped_heads = false;     // ≥ 2 query heads and an adapter that supports GQA
  // An adapter that accepts ≥ 2 mask conventions; with fewer than two that are not
  // causal flags, cases drawn under a flag (top-left first), which every one expresses;
  // with fewer than two additive ones (and a bias the adapter does not own), no score bias.
  bool two_mask_conventions = false;
  // The verdict compares against the oracle: value profile, scale and positions only
  // where the adapter's declared accuracy leaves the tolerance informative
  // (cases/predicted_floor.h).
  bool informative_oracle = false;
  // The verdict judges a gradient within the tolerance model (the backward laws but
  // backward-non-interference, which compares bitwise): value profile and scale only
  // where a row's scores spread at most kGradientScoreSpread (cases/predicted_floor.h),
  // so the softmax is not one-hot and the gradient through the scores is not lost in
  // their rounding.
  bool informative_gradient = false;
  // The verdict differences the kernel's own forward (backward-self-consistency): a
  // kernel that also takes f32 or f16 is drawn no bf16 there. A bf16 forward rounds
  // each output by 2^−8 of itself, and the finite difference through the scores drowns
  // in it: 27 % of the example plugin's bf16 cases were skips, against 7 % of its f32
  // and f16 ones. The other backward laws judge its bf16 gradients; a bf16-only kernel
  // keeps bf16 here too.
  bool precise_forward = false;
  // The law's scenarios handle Tq > Tk (leading queries before the first key): such
  // cases are drawn for adapters with Capabilities::queries_beyond_keys, and a
  // replayed one is skipped by the laws without it.
  bool queries_beyond_keys = false;
  // The backward call (Capabilities::has_backward), in the padded layout: descriptor
  // cases are drawn without varlen and paged forms.
  bool backward = false;
  // The law runs the case's decode plan (Case::decode_chunks) through the adapter's
  // cached-decode session, or over a varlen or paged cache the caller owns
  // (harness.h RunCallerCacheDecode): sessions are a feature of its cases
  // (cases/features.h). Every declared form is drawn.
  bool decode_plan = false;
};

// Shortest row that can pack two non-empty documents, and shortest row in which
// Decode's padding still leaves two slots for them.
inline constexpr int kMinPackedLength = 2;
inline constexpr int kMinPackedPaddedLength = 5;

// The adapter's capabilities narrowed by the law's needs; nullopt with the reason
// in *why when nothing the adapter accepts can meet them.
std::optional<Capabilities> NarrowToNeeds(const Capabilities& caps, const LawNeeds& needs, std::string* why);

}  // namespace attncheck
