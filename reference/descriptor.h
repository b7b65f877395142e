// A Case as a visibility descriptor (cases/visibility_descriptor.h), and what a
// descriptor means: the dense visibility a kernel given it must apply. The
// descriptor's meaning follows FlashAttention (block_info.h, mask.h): in sequence
// s with nq real queries and nk keys, query i's diagonal is d(i) = i (top-left) or
// i + nk − nq (bottom-right, also the reference point of windows without causal),
// and key j (0 ≤ j < nk) is visible when
//   (causal ⇒ j ≤ d(i)) ∧ (left ≥ 0 ⇒ j ≥ d(i) − left) ∧ (right ≥ 0 ⇒ j ≤ d(i) + right)
//   ∧ (C > 0 ⇒ ⌊j/C⌋ = ⌊d(i)/C⌋),   or   d(i) < P ∧ j < P  (prefix-LM, P > 0).
// A padded batch row b has keys [leftpad_k[b], seqused_k[b]) and real queries
// [0, seqused_q[b]); Tq > Tk gives rows with no visible key.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cases/case.h"
#include "cases/visibility_descriptor.h"

namespace attncheck::reference {

// The descriptor of case c under the declared `forms`, or nullopt with the reason
// in *why (a skip: the kernel's forms cannot express the case). The forms are first
// narrowed to c.layout and c.page_size (a layout or size not declared: a skip); under
// kAuto a kernel with the varlen form gets varlen (pads dropped, every document its
// own sequence). A padded descriptor without leftpad_k but with seqused_k moves a
// left-padded row's keys to slot 0 (KeysCompacted). Paged pages are shuffled by c.seed.
std::optional<VisibilityDescriptor> Describe(const Case& c, const DescriptorForms& forms, std::string* why);

// Whether d = Describe(c, ...) hands c's left-padded rows with their keys moved to
// slot 0 (the ragged layout: a padded descriptor with no leftpad_k, of a case with a
// left pad): the call's key slot j of row b is then the case's slot j + KeySlotShift.
bool KeysCompacted(const VisibilityDescriptor& d, const Case& c);
int KeySlotShift(const VisibilityDescriptor& d, const Case& c, int row);

// Whose KV cache a cached-decode step reads.
enum class StepCache {
  kSession,  // the kernel's own session: a padded batch (kPadded: slots as they are, never paged)
  kCaller,   // the caller's, handed to attention() each step in the case's own layout and
             // page size (varlen: the keys so far per sequence; paged: their pages)
};

// The case a cached-decode step sees: every row cut to its first `keys` slots (the
// keys appended so far), the last `queries` of them queries. Its visibility is the
// case's, restricted to those queries and keys; Describe(StepCase(...)) is the
// descriptor of the step, in the layout of `cache`.
Case StepCase(const Case& c, int keys, int queries, StepCache cache = StepCache::kSession);

// Token maps of a varlen descriptor of c: packed query t is (row, query index)
// query_of[t]; packed key t is (row, key slot) key_of[t].
struct PackedTokens {
  std::vector<std::pair<int, int>> query_of;
  std::vector<std::pair<int, int>> key_of;
};
PackedTokens PackedTokensOf(const Case& c);

// Query i of sequence s may read its key j (indices local to the sequence: keys
// after the left pad, queries from the sequence's first).
bool DescriptorSees(const VisibilityDescriptor& d, int sequence, int i, int j);

// The descriptor's visibility: padded batch [B, Tq, Tk] in slot coordinates; varlen
// [total queries, total keys] on the packed axes.
std::vector<uint8_t> DescriptorVisibility(const VisibilityDescriptor& d);

// The descriptor's visibility on c's geometry [B, Tq, Tk] (varlen scattered back
// through PackedTokensOf(c), compacted keys moved back to their slots): equal to
// Visibility(c) when d = Describe(c, ...).
std::vector<uint8_t> DescriptorVisibilityOnCase(const VisibilityDescriptor& d, const Case& c);

// ggml's ALiBi slopes from max_bias (ggml_soft_max_ext): with m = 2^⌊log2 H⌋,
// head h < m gets 2^(−max_bias/m)^(h+1), the rest 2^(−max_bias/(2m))^(2(h−m)+1).
std::vector<double> AlibiSlopesFromMaxBias(double max_bias, int heads);

// The forms a FlashAttention-class kernel takes: bottom-right causal, window,
// prefix, chunk, ALiBi slopes, softcap, and either the padded batch's seqused /
// leftpad or varlen cu_seqlens (page_size > 0 adds a block table).
DescriptorForms FlashAttentionForms(bool varlen, int page_size = 0);

// One line per part that is set ("cu_seqlens_q: 0 2 5"), for `attncheck show`.
std::string DescriptorText(const VisibilityDescriptor& d);

// Where sequence s's key slot t lives in a paged layout: (physical page, offset).
std::pair<int, int> PagedSlot(const PagedKv& paged, int sequence, int t);

}  // namespace attncheck::reference
