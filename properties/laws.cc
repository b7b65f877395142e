#include "properties/laws.h"

#include <array>
#include <exception>

#include <fmt/format.h>

#include "properties/backward_support.h"
#include "properties/tolerance.h"

namespace attncheck {

namespace {
constexpr EncodingKind kRopeOnly[] = {EncodingKind::kRope};

constexpr std::array kLaws = {
    Law{.name = "non-interference",
        .description = "perturbing keys a query cannot see leaves its output bitwise unchanged",
        .check = check_non_interference,
        .requirement =
            "For every query row i, perturbing any key or value j that the reference says i cannot see "
            "must leave out[i] bitwise unchanged (no causal, padding, prefix-LM or window leak).",
        .suite = "NonInterference",
        .needs = {.queries_beyond_keys = true}},
    Law{.name = "left-padding",
        .description = "extra left/right pads with cumsum position ids leave real rows unchanged",
        .check = check_left_padding,
        .requirement =
            "Adding left (or right) pads, with the mask and position_ids = cumsum(mask) − 1, must leave "
            "every real row's output unchanged.",
        .suite = "LeftPadding"},
    Law{.name = "packed-isolation",
        .description = "a packed document equals the document alone; other documents never reach it",
        .check = check_packed_isolation,
        .requirement =
            "A document packed with others must give the same output as alone (positions reset per "
            "document), and changing another document must change nothing in it.",
        .suite = "PackedIsolation",
        .needs = {.packed_documents = true}},
    Law{.name = "rope-relative",
        .description = "RoPE matches R(p)x in the stated layout; q·k depends only on n − m; norms kept",
        .check = check_rope_relative,
        .requirement =
            "After rotation, q·k must depend only on n − m and equal qᵀR(n−m)k of the reference for the "
            "stated layout and rotary dim; positions must matter and norms must be preserved.",
        .suite = "RopeRelative",
        .needs = {.encodings = kRopeOnly, .own_rope = true, .fixed_rope_frequencies = true}},
    Law{.name = "decode-consistency",
        .description = "prefill then chunked cached decode equals one prefill; no state across calls",
        .check = check_decode_consistency,
        .requirement =
            "Prefill-all must equal prefill P then decode in chunks (Tq > 1, rows with different past "
            "lengths, bottom-right causal), and a session run as (A, long, A) must answer A the same "
            "both times.",
        .suite = "DecodeConsistency",
        .needs = {.decode_plan = true}},
    Law{.name = "masked-rows",
        .description = "rows with no visible key follow the declared policy; poisoned masked K/V never leak",
        .check = check_masked_rows,
        .requirement =
            "With rows that have no visible key, real rows must stay finite and correct, fully masked "
            "rows must follow the adapter's declared policy, NaN or huge values poisoned into masked "
            "K/V must never reach a visible output, and no additive fill may overflow to −inf in "
            "f16/bf16.",
        .suite = "MaskedRows",
        .needs = {.informative_oracle = true, .queries_beyond_keys = true}},
    Law{.name = "reference-agreement",
        .description = "attention output within k·max|naive − oracle| + floor (per row) of the double oracle",
        .check = check_reference_agreement,
        .requirement =
            "Every output row must agree with the double-precision reference within "
            "k·max|naive − oracle| + floor over the row, where naive is the reference model computing "
            "as the adapter declares (its accumulation dtypes and roundings).",
        .suite = "ReferenceAgreement",
        .needs = {.informative_oracle = true, .queries_beyond_keys = true}},
    Law{.name = "mask-conventions",
        .description = "every accepted mask convention gives the same output",
        .check = check_mask_conventions,
        .requirement =
            "The same visibility handed to the kernel in each mask convention it accepts must give the "
            "same output.",
        .suite = "MaskConventions",
        .needs = {.two_mask_conventions = true, .queries_beyond_keys = true}},
    Law{.name = "gqa",
        .description = "grouped-query attention equals MHA with kv heads repeated (kv = h / group)",
        .check = check_gqa,
        .requirement =
            "Grouped-query attention must equal multi-head attention with each kv head repeated: query "
            "head h reads kv head ⌊h / (Hq/Hkv)⌋.",
        .suite = "Gqa",
        .needs = {.grouped_heads = true, .queries_beyond_keys = true}},
    Law{.name = "backward-agreement",
        .description = "dq, dk, dv within the tolerance model of the double reference backward",
        .check = check_backward_agreement,
        .requirement =
            "Under a random upstream gradient dO, the backward call's dq, dk and dv must agree with the "
            "double-precision reference backward (dP = dO·Vᵀ, dS = P ∘ (dP − rowsum(dO ∘ O)), the scale, "
            "softcap's tanh′) within k·max|naive − oracle| + floor per row, the naive model storing in the "
            "case dtype and summing in the declared accumulation.",
        .suite = "BackwardAgreement",
        .needs = {.informative_oracle = true,
                  .informative_gradient = true,
                  .queries_beyond_keys = true,
                  .backward = true}},
    Law{.name = "backward-non-interference",
        .description = "keys a gradient-carrying row cannot see get exactly zero dK/dV; dQ ignores them bitwise",
        .check = check_backward_non_interference,
        .requirement =
            "With upstream gradient only on rows that cannot see key j, dK_j and dV_j must be exactly 0; "
            "perturbing keys and values that row i cannot see must leave dQ_i unchanged (bitwise, but for the "
            "sign of a zero).",
        .suite = "BackwardNonInterference",
        .needs = {.queries_beyond_keys = true, .backward = true}},
    Law{.name = "backward-masked-rows",
        .description = "rows with no visible key get dQ = 0 and add nothing to dK/dV; poisoned K/V reach no gradient",
        .check = check_backward_masked_rows,
        .requirement =
            "A row with no visible key must have dQ = 0 and add nothing to dK or dV (NaN there is a hazard "
            "where the masked-row policy allows it), the real rows' gradients must agree with the reference, "
            "and NaN poisoned into keys no query may read must reach no gradient of a real row or read key.",
        .suite = "BackwardMaskedRows",
        .needs = {.informative_oracle = true,
                  .informative_gradient = true,
                  .queries_beyond_keys = true,
                  .backward = true}},
    Law{.name = "backward-gqa",
        .description = "grouped backward equals the repeated-MHA backward, dK/dV summed over each group",
        .check = check_backward_gqa,
        .requirement =
            "The gradients of grouped-query attention must equal those of multi-head attention with each kv "
            "head repeated, dK and dV of kv head g summed over the query heads h with ⌊h / (Hq/Hkv)⌋ = g.",
        .suite = "BackwardGqa",
        .needs = {.grouped_heads = true, .informative_gradient = true, .queries_beyond_keys = true, .backward = true}},
    Law{.name = "backward-packed-isolation",
        .description = "a packed document's gradients equal the document's alone; other documents never reach them",
        .check = check_backward_packed_isolation,
        .requirement =
            "Under the same upstream rows, a document packed with others must get the dq, dk and dv it gets alone "
            "(positions reset per document; within the gradient tolerance model, the call alone having another "
            "shape), and changing another document's keys, values or upstream gradient must change none of its "
            "gradients (by value, but for the sign of a zero).",
        .suite = "BackwardPackedIsolation",
        .needs = {.packed_documents = true, .informative_gradient = true, .backward = true}},
    Law{.name = "backward-self-consistency",
        .description = "the gradient matches the kernel's own forward's finite difference along random directions",
        .check = check_backward_self_consistency,
        .requirement =
            "Along random directions Δ of (q, k, v) in the case dtype, L(x+Δ) − L(x−Δ) with L = ⟨dO, forward⟩ "
            "through the kernel's own forward must equal 2⟨gradient, Δ⟩ within the forward's rounding at both "
            "points, the central difference's truncation (estimated from the forward at ±2Δ) and the backward's "
            "rounding; no reference value is compared.",
        .suite = "BackwardSelfConsistency",
        .needs = {.informative_gradient = true, .precise_forward = true, .queries_beyond_keys = true,
                  .backward = true}},
};
}  // namespace

std::span<const Law> AllLaws() { return kLaws; }

const Law* FindLaw(std::string_view name) {
  for (const Law& law : kLaws)
    if (law.name == name) return &law;
  return nullptr;
}

const Law& LawOf(LawCheck check) {
  for (const Law& law : kLaws)
    if (law.check == check) return law;
  std::terminate();  // every check function has its row
}

Verdict RunLaw(const Law& law, Adapter& adapter, const Case& c, const Options& options) noexcept {
  try {
    Verdict v = law.check(adapter, c, DeclaredOptions(adapter.capabilities(), options));  // its own accuracy
    return law.needs.backward ? NanFromEmptyRowsIsAHazard(std::move(v), adapter.capabilities(), c) : v;
  } catch (const std::exception& e) {
    return Verdict::Error(fmt::format("{} threw: {}", law.name, e.what()));
  } catch (...) {
    return Verdict::Error(fmt::format("{} threw a non-standard exception", law.name));
  }
}

}  // namespace attncheck
