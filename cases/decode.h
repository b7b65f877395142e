// Decode: the one decoder every driver uses (DESIGN §3; STYLE "A generator is a
// decoder"). It turns typed draws from any Source into a valid Case, drawing
// *inside* the adapter's Capabilities (never filter-and-retry) and aiming at the
// boundaries where kernels break: tile edges, Tq < Tk and Tq == Tk, W and L
// around T, positions near 2^8, 2^11, 2^16, odd head counts, partial rotary,
// zero-length documents, padded rows with no visible key.
//
// Only integers, booleans and table picks are drawn; every double comes from a
// table below. Every draw is labelled with its field ("rows[0].left_pad"). A
// source out of bytes returns minimums, and all-minimum draws give the smallest
// case (batch 1, one head, D = 2, Tk = Tq = 1, causal, no padding, seed 0), so
// table entry 0 is always the plainest value.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "cases/capabilities.h"
#include "cases/case.h"
#include "cases/head_dims.h"
#include "cases/law_needs.h"
#include "cases/predicted_floor.h"
#include "cases/size_tier.h"
#include "cases/source.h"

namespace attncheck {

// ---- Boundary tables (DESIGN §3). Entry 0 is the plainest value. ----

// Key lengths at tile edges (16/32/64/128-wide tiles), clipped to max_tokens.
inline constexpr int kTileKeyLengths[] = {1, 2, 3, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129};
// Largest key length of the "small" key-length branch.
inline constexpr int kSmallKeyLength = 8;
// Query lengths of a decode step (Tq < Tk), clipped to Tk.
inline constexpr int kDecodeQueryLengths[] = {1, 2, 3};
// Logical position of each row's documents' first token: near 2^8, 2^11, 2^16.
// Entries with offset + Tk − 1 > max_position are dropped (0 always stays).
inline constexpr int kPositionOffsets[] = {0, 0, 0, 1, 255, 256, 257, 2047, 2048, 2049, 65535, 65536};
// xPos magnitudes grow like scale^(±pos/scale_base): offsets stay ≤ this.
inline constexpr int kXposMaxOffset = 2048;
// Head dims; odd ones only for encodings that do not pair dimensions.
inline constexpr int kEvenHeadDims[] = {2, 4, 6, 8, 12, 16, 32, 64, 128, 256};
inline constexpr int kOddHeadDims[] = {3, 5, 7, 15, 17, 33};
// RoPE parameters.
inline constexpr double kRopeBases[] = {10000.0, 500000.0, 1e6, 100.0};
inline constexpr double kRopeFactors[] = {2.0, 1.5, 4.0, 8.0, 16.0, 32.0, 1.0};
// original_context L: 4096, then T−1, T, T+1 (T = largest position + 1), then these.
inline constexpr int kFixedOriginalContexts[] = {2048, 32};
inline constexpr int kSmallOriginalContext = 64;  // plus uniform in [1, this]
struct YarnBetas {
  double fast;
  double slow;
};
inline constexpr YarnBetas kYarnBetas[] = {{32.0, 1.0}, {16.0, 2.0}};
inline constexpr double kYarnAttnFactors[] = {0.0, 1.0};  // 0 = 0.1·ln s + 1
inline constexpr double kNtkMixedB[] = {0.5, 0.25, 0.75};
// Score-bias parameters.
inline constexpr int kT5Buckets[] = {32, 4, 8, 16};
inline constexpr int kT5MaxDistances[] = {128, 32, 64, 256};  // all > buckets/2
inline constexpr KerpleKind kKerpleKinds[] = {KerpleKind::kLog, KerpleKind::kPower};
inline constexpr double kXposScaleBases[] = {512.0, 64.0, 256.0};
inline constexpr double kSandwichScales[] = {1.0, 0.5, 2.0};
// Numerics.
inline constexpr double kScales[] = {0.0, 1.0, 0.125};  // 0 = 1/sqrt(head_dim)
inline constexpr double kSoftcaps[] = {0.0, 50.0, 30.0, 1.0};
// Window W and chunk sizes around a length T: 1, 2, T−1, T, T+1, or small.
inline constexpr int kSmallWindow = 8;
// Decode chunks: up to this many, each 1..3 or (sometimes) up to the rest.
inline constexpr int kMaxDecodeChunks = 4;
inline constexpr int kSmallDecodeChunk = 3;
inline constexpr int64_t kMaxSeed = int64_t{1} << 31;

namespace decode_detail {

template <Source S, class T>
T PickOr(S& src, const std::vector<T>& choices, T fallback, std::string_view name) {
  if (choices.empty()) return fallback;
  return choices[static_cast<size_t>(src.Int(0, static_cast<int64_t>(choices.size()) - 1, name))];
}

template <Source S>
int DrawInt(S& src, int lo, int hi, std::string_view name) {
  return static_cast<int>(src.Int(lo, std::max(lo, hi), name));
}

// The entries of `table` that are ≤ limit (the table's first entry if none is).
template <size_t N>
std::vector<int> Clip(const int (&table)[N], int limit) {
  std::vector<int> kept;
  for (int v : table) {
    if (v <= limit) kept.push_back(v);
  }
  if (kept.empty()) kept.push_back(table[0]);
  return kept;
}

// A size around length t: 1, 2, t−1, t, t+1, or uniform in [1, kSmallWindow].
template <Source S>
int AroundLength(S& src, int t, const std::string& name) {
  switch (src.Int(0, 5, name + ".kind")) {
    case 0: return 1;
    case 1: return 2;
    case 2: return std::max(1, t - 1);
    case 3: return std::max(1, t);
    case 4: return t + 1;
    default: return DrawInt(src, 1, kSmallWindow, name);
  }
}

// Head counts of real models that are not powers of two: ALiBi's slopes interleave
// a second geometric series past the largest power of two (ggml's m0/m1), and GQA
// maps many rows onto few groups. Those in (max_heads, many_heads].
inline constexpr int kManyHeadCounts[] = {6, 12, 20, 24, 40};
inline std::vector<int> ManyHeadCounts(int many_heads, int max_heads) {
  std::vector<int> counts;
  for (int n : kManyHeadCounts)
    if (n > max_heads && n <= many_heads) counts.push_back(n);
  return counts;
}

// Hook: the shortest key length the law's needs allow (two documents need two slots).
inline int MinKeyLength(const LawNeeds& needs) { return needs.packed_documents ? kMinPackedLength : 1; }

template <Source S>
int DrawKeyLength(S& src, int max_tokens, int min_len) {
  switch (src.Int(0, 2, "key_len.kind")) {
    case 0: return DrawInt(src, min_len, std::min(max_tokens, kSmallKeyLength), "key_len");
    case 1: {
      const std::vector<int> tiles = Clip(kTileKeyLengths, max_tokens);
      return std::max(min_len, Pick(src, std::span<const int>(tiles), "key_len"));
    }
    default: return DrawInt(src, min_len, max_tokens, "key_len");
  }
}

template <Source S>
int DrawQueryLength(S& src, int key_len) {
  switch (src.Int(0, 2, "query_len.kind")) {
    case 0: return key_len;  // prefill
    case 1: return std::min(key_len, Pick(src, kDecodeQueryLengths, "query_len"));  // decode step
    default: return DrawInt(src, 1, key_len, "query_len");
  }
}

// Hook for a kernel given a padded-batch visibility descriptor (kDescriptor without
// the varlen form, reference/descriptor.h): one document per row and no query row
// inside the left padding, which only cu_seqlens could express.
struct PaddedDescriptorRows {
  bool on = false;
  int max_left_pad = 0;  // Tk − Tq
  // The ragged layout (DescriptorLayout::kRagged): a drawn right pad joins the left
  // pad, so every row's queries are real and its keys are handed from slot 0 with
  // seqused_k and no seqused_q (flash_attn_with_kvcache's cache_seqlens).
  bool ragged = false;
};

// The encodings a kDescriptor kernel can be given: no score bias except ALiBi
// when its forms take slopes.
inline std::vector<EncodingKind> DescriptorEncodings(const Capabilities& caps) {
  const DescriptorForms& forms = caps.descriptor_forms;
  std::vector<EncodingKind> kinds;
  for (EncodingKind kind : caps.encodings) {
    const bool alibi = kind == EncodingKind::kAlibi && (forms.alibi || forms.alibi_max_bias);
    if (!IsScoreBiasKind(kind) || alibi) kinds.push_back(kind);
  }
  return kinds;
}

// One batch row of `key_len` slots: [left_pad][documents…][right_pad]. `pack`
// (hook for LawNeeds::packed_documents): the row packs ≥ 2 non-empty documents —
// padded only when it still leaves two slots, the first and last documents ≥ 1.
// `leading` queries before the first key (Tq > Tk, cases/case.h RowSpec): the row
// then has no left pad and a position offset ≥ leading.
template <Source S>
RowSpec DrawRow(S& src, int b, int key_len, bool flag, VisibilityKind visibility, int max_offset, bool pack,
                const PaddedDescriptorRows& padded = {}, int leading = 0) {
  RowSpec row;
  if (flag) {  // a causal flag expresses exactly one unpadded document at position 0 (leading: at `leading`)
    row.documents = {key_len};
    row.position_offset = leading;
    return row;
  }
  const std::string at = "rows[" + std::to_string(b) + "]";
  // Half the rows unpadded; pads take at most half of what is left (at least
  // one slot), so fully padded rows happen only in very short rows.
  const bool may_pad = !pack || key_len >= kMinPackedPaddedLength;
  const int64_t padding = may_pad ? src.Int(0, 5, at + ".padding") : 0;  // 0-2 none, 3 left, 4 right, 5 both
  if (padding == 3 || padding == 5) row.left_pad = DrawInt(src, 1, std::max(1, key_len / 2), at + ".left_pad");
  if (padded.on) row.left_pad = std::min(row.left_pad, padded.max_left_pad);
  if (leading > 0) row.left_pad = 0;
  if ((padding == 4 || padding == 5) && key_len - row.left_pad >= 1) {
    row.right_pad = DrawInt(src, 1, std::max(1, (key_len - row.left_pad) / 2), at + ".right_pad");
  }
  if (padded.on && padded.ragged && leading == 0) {
    row.left_pad = std::min(row.left_pad + row.right_pad, padded.max_left_pad);
    row.right_pad = 0;
  }
  int remaining = key_len - row.left_pad - row.right_pad;
  if (pack || (!padded.on && src.Bool(at + ".packed"))) {
    const int count = DrawInt(src, 2, 4, at + ".document_count");
    for (int d = 0; d + 1 < count; ++d) {
      const int lo = pack && d == 0 ? 1 : 0, hi = pack ? remaining - 1 : remaining;
      const int length = DrawInt(src, lo, hi, at + ".documents[" + std::to_string(d) + "]");
      row.documents.push_back(length);
      remaining -= length;
    }
  }
  row.documents.push_back(remaining);
  if (visibility == VisibilityKind::kPrefixLm) {
    const int longest = *std::max_element(row.documents.begin(), row.documents.end());
    row.prefix_len = DrawInt(src, 0, longest + 1, at + ".prefix_len");
  }
  std::vector<int> offsets;
  if (leading > 0) offsets.push_back(leading);
  for (int offset : kPositionOffsets) {
    if (offset <= max_offset && (leading == 0 || offset > leading)) offsets.push_back(offset);
  }
  row.position_offset = Pick(src, std::span<const int>(offsets), at + ".position_offset");
  return row;
}

// Hook (LawNeeds::informative_oracle, informative_gradient): the entries of `table`
// that keep case `c`, with the entry set by `set`, informative: its predicted floor
// at most kInformativeFloor, and for a gradient its typical score spread at most
// kGradientScoreSpread (cases/predicted_floor.h); in table order. The entry that
// exceeds its limits least when none keeps within them. Without the needs: the
// whole table.
template <class T, class Set>
std::vector<T> InformativeEntries(std::span<const T> table, const LawNeeds& needs, const Capabilities& caps, Case c,
                                  int largest_position, Set set) {
  if (!needs.informative_oracle && !needs.informative_gradient) return {table.begin(), table.end()};
  std::vector<T> kept;
  size_t best = 0;
  double best_excess = INFINITY;
  for (size_t e = 0; e < table.size(); ++e) {
    set(c, table[e]);
    double excess = 0.0;  // the largest ratio of a prediction to its limit
    if (needs.informative_oracle) {
      excess = PredictedFloor(caps, c, largest_position, c.key_len()) / kInformativeFloor;
    }
    if (needs.informative_gradient) excess = std::max(excess, TypicalScoreSpread(c) / kGradientScoreSpread);
    if (excess <= 1.0) kept.push_back(table[e]);
    if (excess < best_excess) best = e, best_excess = excess;
  }
  if (kept.empty()) kept.push_back(table[best]);
  return kept;
}

// Whether case `c`, at the normal profile, the smallest scale still to be drawn
// and the smallest xPos scale base, keeps its predicted floor (rows of `key_len`
// keys reaching `largest_position`) within kInformativeFloor: the best that the
// draws after it (InformativeEntries) can make of it.
inline bool InformativeAtSmallestScale(const Capabilities& caps, Case c, int largest_position, int key_len) {
  c.profile = ValueProfile::kNormal;
  c.encoding.xpos_scale_base = *std::min_element(std::begin(kXposScaleBases), std::end(kXposScaleBases));
  double smallest = c.effective_scale();
  if (caps.scale_argument) {
    for (double scale : kScales) smallest = std::min(smallest, scale == 0.0 ? c.effective_scale() : scale);
  }
  c.scale = smallest;
  return PredictedFloor(caps, c, largest_position, key_len) <= kInformativeFloor;
}

// Hook (LawNeeds::informative_oracle): the largest position offset (≤ max_offset,
// from kPositionOffsets) whose rows of `key_len` slots keep a normal-profile case
// informative at the smallest scale and xPos scale base still to be drawn; 0
// when none does. RoPE's magnitudes are drawn after the rows (DrawRope).
inline int InformativeMaxOffset(const Capabilities& caps, const Case& c, int key_len, int max_offset) {
  int best = 0;
  for (int offset : kPositionOffsets) {
    if (offset <= max_offset && InformativeAtSmallestScale(caps, c, offset + key_len - 1, key_len)) {
      best = std::max(best, offset);
    }
  }
  return best;
}

// Hook (LawNeeds::queries_beyond_keys, for an adapter with
// Capabilities::queries_beyond_keys): in about one case in eight, E > 0 leading
// queries before the first key (Tq = Tk + E): by one, two, Tk (twice as many
// queries as keys) or a few. Their positions need row offsets ≥ E, so E ≤ `room`.
// 0, drawing nothing, without the need.
template <Source S>
int DrawLeadingQueries(S& src, const Capabilities& caps, const LawNeeds& needs, bool top_left, int key_len,
                       int room) {
  if (!needs.queries_beyond_keys || !caps.queries_beyond_keys || top_left) return 0;
  if (src.Int(0, 7, "query_len.leading.on") != 0) return 0;
  int leading = 1;
  switch (src.Int(0, 3, "query_len.leading.kind")) {
    case 0: leading = 1; break;
    case 1: leading = 2; break;
    case 2: leading = key_len; break;
    default: leading = DrawInt(src, 1, kSmallWindow, "query_len.leading");
  }
  return std::min({leading, room, kMaxLeadingQueries});
}

// Hook: log-n scaling depends on absolute length; a law that shifts positions
// without a rotation stage to test cannot use it.
inline bool FixedFrequencies(const LawNeeds& needs, const Capabilities& caps) {
  return needs.fixed_rope_frequencies && !caps.has_rope_stage;
}

template <Source S>
void DrawRope(S& src, const Capabilities& caps, const LawNeeds& needs, Case& c, int longest_position,
              int longest_document) {
  RopeSpec& r = c.encoding.rope;
  const bool is_rope = c.encoding.kind == EncodingKind::kRope;
  if (is_rope) r.layout = PickOr(src, caps.rope_layouts, RopeLayout::kHalfSplit, "encoding.rope.layout");
  r.base = Pick(src, kRopeBases, "encoding.rope.base");
  if (c.head_dim >= 4 && src.Bool("encoding.rope.partial")) {
    r.rotary_dim = 2 * DrawInt(src, 1, c.head_dim / 2 - 1, "encoding.rope.rotary_dim");
  }
  if (!is_rope) {  // xPos: half-split rotation, no scaling
    c.encoding.xpos_scale_base = Pick(src, kXposScaleBases, "encoding.xpos_scale_base");
    return;
  }
  r.scaling = PickOr(src, caps.rope_scalings, RopeScaling::kNone, "encoding.rope.scaling");
  r.log_n = caps.rope_log_n && !FixedFrequencies(needs, caps) && src.Bool("encoding.rope.log_n");
  if (r.scaling != RopeScaling::kNone) r.factor = Pick(src, kRopeFactors, "encoding.rope.factor");
  if (r.scaling != RopeScaling::kNone || r.log_n) {
    const int t = longest_position + 1;
    switch (src.Int(0, 6, "encoding.rope.original_context.kind")) {
      case 0: r.original_context = 4096; break;
      case 1:  // inside the second half of the longest document: a decode step crosses it
        r.original_context = DrawInt(src, std::max(1, t - std::max(1, longest_document / 2)), std::max(1, t - 1),
                                     "encoding.rope.original_context");
        break;
      case 2: r.original_context = t; break;
      case 3: r.original_context = t + 1; break;
      case 4: r.original_context = kFixedOriginalContexts[0]; break;
      case 5: r.original_context = kFixedOriginalContexts[1]; break;
      default:
        r.original_context = DrawInt(src, 1, kSmallOriginalContext, "encoding.rope.original_context");
    }
  }
  // Hook (LawNeeds::informative_oracle): log-n scales q by ln(p + 1) / ln L at the rows'
  // positions, drawn before it (4.6 at p = 65536 for L = 11): kept only where the case
  // can still be judged, as the offsets are (InformativeMaxOffset).
  if (r.log_n && needs.informative_oracle &&
      !InformativeAtSmallestScale(caps, c, longest_position, c.key_len())) {
    r.log_n = false;
  }
  switch (r.scaling) {
    case RopeScaling::kNtkAware:
    case RopeScaling::kDynamicNtk:
      r.ntk_exact_exponent = src.Bool("encoding.rope.ntk_exact_exponent");
      break;
    case RopeScaling::kYarn:
    case RopeScaling::kYarnPaper: {
      const YarnBetas& betas = Pick(src, kYarnBetas, "encoding.rope.beta");
      r.beta_fast = betas.fast;
      r.beta_slow = betas.slow;
      r.attn_factor = Pick(src, kYarnAttnFactors, "encoding.rope.attn_factor");
      break;
    }
    case RopeScaling::kNtkMixed: r.mixed_b = Pick(src, kNtkMixedB, "encoding.rope.mixed_b"); break;
    default: break;  // linear, llama3 (low 1, high 4: the defaults), none
  }
}

}  // namespace decode_detail

// `caps` are the adapter's, narrowed by the law's needs (NarrowToNeeds); `needs`
// steer the draws NarrowToNeeds cannot express (hooks above). Default needs draw
// exactly as before, so corpora and fuzz seeds keep decoding to the same cases.
template <Source S>
Case Decode(S& src, const Capabilities& caps, const LawNeeds& needs = {}) {
  using namespace decode_detail;
  Case c;
  int max_batch = std::clamp(caps.max_batch, 1, kMaxBatch);
  const int max_heads = std::clamp(caps.max_heads, 1, kMaxHeads);
  const int max_head_dim = std::clamp(caps.max_head_dim, 2, kMaxDim);
  const int max_position = std::clamp(caps.max_position, 0, kMaxPosition - 1);
  const int max_tokens = std::clamp(caps.max_tokens, 1, std::min(kMaxKeyLen, max_position + 1));

  // Conventions first: they constrain everything else.
  c.dtype = PickOr(src, caps.dtypes, Dtype::kF32, "dtype");
  c.mask = PickOr(src, caps.masks, MaskConvention::kAdditiveNegInf, "mask");
  const bool descriptor = c.mask == MaskConvention::kDescriptor;
  c.encoding.kind = PickOr(src, descriptor ? DescriptorEncodings(caps) : caps.encodings, EncodingKind::kNone,
                           "encoding.kind");
  // A kernel declaring several layouts or page sizes is handed each in turn (only
  // then drawn, so every other kernel's cases decode as before).
  // A law that packs documents keeps kAuto: varlen, the only layout packing them.
  if (descriptor) {
    const std::vector<DescriptorLayout> layouts = DeclaredLayouts(caps.descriptor_forms);
    if (layouts.size() > 1 && !needs.packed_documents) c.layout = Pick(src, std::span<const DescriptorLayout>(layouts), "layout");
    const std::vector<int> page_sizes = DeclaredPageSizes(caps.descriptor_forms);
    if (page_sizes.size() > 1) c.page_size = Pick(src, std::span<const int>(page_sizes), "page_size");
  }
  const bool flag = IsCausalFlag(c.mask);
  const bool top_left = c.mask == MaskConvention::kCausalTopLeft;
  const EncodingKind kind = c.encoding.kind;

  // Heads: every count in [1, max_heads] (3, 5, 6, … are not powers of two);
  // kv_heads a divisor of q_heads, q_heads itself first (plain multi-head).
  c.q_heads = DrawInt(src, needs.grouped_heads ? std::min(2, max_heads) : 1, max_heads, "q_heads");
  if (const std::vector<int> many = ManyHeadCounts(caps.many_heads, max_heads);
      !many.empty() && src.Int(0, 31, "q_heads.many") == 0) {
    c.q_heads = Pick(src, std::span<const int>(many), "q_heads.many_count");  // ALiBi slopes interleave past 2^k
  }
  c.kv_heads = c.q_heads;
  if (caps.gqa) {
    std::vector<int> divisors;
    for (int d = c.q_heads; d >= 1; --d) {
      if (c.q_heads % d == 0) divisors.push_back(d);
    }
    c.kv_heads = Pick(src, std::span<const int>(divisors), "kv_heads");
  }

  // Head dims: even for encodings that pair dimensions, odd sometimes otherwise;
  // only those the kernel takes (cases/head_dims.h; none: drawn, then skipped).
  const std::vector<int> odd = AllowedHeadDims(caps, Clip(kOddHeadDims, max_head_dim), max_head_dim, true);
  std::vector<int> even = AllowedHeadDims(caps, Clip(kEvenHeadDims, max_head_dim), max_head_dim, false);
  if (even.empty()) even = Clip(kEvenHeadDims, max_head_dim);
  if (!NeedsEvenHeadDim(kind) && !odd.empty() && src.Bool("head_dim.odd")) {
    c.head_dim = Pick(src, std::span<const int>(odd), "head_dim");
  } else {
    c.head_dim = Pick(src, std::span<const int>(even), "head_dim");
  }
  c.value_dim = c.head_dim;
  if (caps.value_dim_differs && src.Bool("value_dim.differs")) {
    c.value_dim = DrawInt(src, 1, max_head_dim, "value_dim");
  }

  // Lengths: Tk first (every row has Tk slots), then Tq ≤ Tk.
  int key_len = DrawKeyLength(src, max_tokens, std::min(max_tokens, MinKeyLength(needs)));
  c.query_len = top_left ? key_len : DrawQueryLength(src, key_len);
  const int drawn_key_len = key_len;
  key_len = DrawSizeTier(src, caps, top_left, key_len, max_batch, c);  // a declared share at kernel-path sizes
  if (key_len == drawn_key_len) {  // not in the size tier: a declared share at the kernel's tile edges
    key_len = DrawTileEdges(src, caps, top_left, key_len, std::min(max_tokens, MinKeyLength(needs)), max_tokens, c);
  }

  // Task visibility; a causal flag can only express causal.
  if (!flag) c.visibility = Pick(src, std::span<const VisibilityKind>(kAllVisibilityKinds), "visibility");
  if (c.visibility == VisibilityKind::kSlidingWindow) c.window = AroundLength(src, key_len, "window");
  // A third of the windows are two-sided (local bidirectional attention; FlashAttention's
  // right bound), R drawn at the same edges: 1, 2, T − 1, T, T + 1 or small.
  if (c.visibility == VisibilityKind::kSlidingWindow && src.Int(0, 2, "window.two_sided") == 0) {
    c.window_right = AroundLength(src, key_len, "window.right");
  }
  if (c.visibility == VisibilityKind::kChunked) c.chunk = AroundLength(src, key_len, "chunk");
  // A window or chunk of 0 has no descriptor form.
  if (descriptor && c.visibility == VisibilityKind::kSlidingWindow) c.window = std::max(c.window, 1);
  if (descriptor && c.visibility == VisibilityKind::kChunked) c.chunk = std::max(c.chunk, 1);

  // Rows: split Tk into left pad + documents + right pad, each row on its own.
  int max_offset = max_position - (key_len - 1);
  if (kind == EncodingKind::kXpos) max_offset = std::min(max_offset, kXposMaxOffset);
  if (needs.informative_oracle) max_offset = InformativeMaxOffset(caps, c, key_len, max_offset);
  const int leading = DrawLeadingQueries(src, caps, needs, top_left, key_len, max_offset);
  if (leading > 0) c.query_len = key_len + leading;
  if (flag) max_offset = 0;
  const bool varlen_layout = caps.descriptor_forms.varlen &&
                            (c.layout == DescriptorLayout::kAuto || c.layout == DescriptorLayout::kVarlen);
  const PaddedDescriptorRows padded{descriptor && !varlen_layout, std::max(0, key_len - c.query_len),
                                    c.layout == DescriptorLayout::kRagged};
  const int batch = DrawInt(src, 1, max_batch, "batch");
  int longest_position = 0, longest_document = 0;
  for (int b = 0; b < batch; ++b) {
    c.rows.push_back(
        DrawRow(src, b, key_len, flag, c.visibility, max_offset, needs.packed_documents && b == 0, padded, leading));
    const RowSpec& row = c.rows.back();
    const int longest = *std::max_element(row.documents.begin(), row.documents.end());
    longest_position = std::max(longest_position, row.position_offset + std::max(0, longest - 1));
    longest_document = std::max(longest_document, longest);
  }

  // Decode plan: prefill Tk − Σ, then chunks of 1..3 tokens (sometimes longer).
  if (!top_left && leading == 0 && src.Bool("decode_chunks.enabled")) {
    const int count = DrawInt(src, 1, kMaxDecodeChunks, "decode_chunks.count");
    int remaining = key_len;
    for (int i = 0; i < count && remaining > 0; ++i) {
      const std::string at = "decode_chunks[" + std::to_string(i) + "]";
      const int hi = src.Bool(at + ".long") ? remaining : std::min(remaining, kSmallDecodeChunk);
      const int size = DrawInt(src, 1, hi, at);
      c.decode_chunks.push_back(size);
      remaining -= size;
    }
  }

  // Encoding parameters, from tables.
  switch (kind) {
    case EncodingKind::kRope:
    case EncodingKind::kXpos: DrawRope(src, caps, needs, c, longest_position, longest_document); break;
    case EncodingKind::kT5:
      c.encoding.t5_buckets = Pick(src, kT5Buckets, "encoding.t5_buckets");
      c.encoding.t5_max_distance = Pick(src, kT5MaxDistances, "encoding.t5_max_distance");
      c.encoding.t5_bidirectional = src.Bool("encoding.t5_bidirectional");
      break;
    case EncodingKind::kKerple: c.encoding.kerple = Pick(src, kKerpleKinds, "encoding.kerple"); break;
    case EncodingKind::kSandwich:
      c.encoding.sandwich_scale = Pick(src, kSandwichScales, "encoding.sandwich_scale");
      break;
    default: break;  // none, sinusoidal, learned, ALiBi (slopes from the head count)
  }

  // Numerics and data.
  // Scale and profile only where the tolerance stays informative, for a law that
  // needs it (hook InformativeEntries; the scale judged at the normal profile).
  if (caps.scale_argument) {  // else 0: 1/sqrt(head_dim)
    const std::vector<double> scales = InformativeEntries(std::span<const double>(kScales), needs, caps, c,
                                                          longest_position, [](Case& x, double s) { x.scale = s; });
    c.scale = Pick(src, std::span<const double>(scales), "scale");
  }
  if (caps.softcap) c.softcap = Pick(src, kSoftcaps, "softcap");
  c.seed = static_cast<uint64_t>(src.Int(0, kMaxSeed, "seed"));
  const std::vector<ValueProfile> profiles =
      InformativeEntries(std::span<const ValueProfile>(kAllValueProfiles), needs, caps, c, longest_position,
                         [](Case& x, ValueProfile p) { x.profile = p; });
  c.profile = Pick(src, std::span<const ValueProfile>(profiles), "profile");
  return c;
}

}  // namespace attncheck
