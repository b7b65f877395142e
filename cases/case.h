// The Case: one plain value describing what a single test examines (DESIGN §2).
// It holds descriptions, never tensors: every tensor element is derived from
// `seed` and `profile` by a counter-based generator (see reference/data.h).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attncheck {

enum class Dtype { kF32, kF16, kBf16 };

// Task visibility G(i, j); key validity and documents are intersected with it:
// V = K_valid ∧ same_doc ∧ G.
enum class VisibilityKind {
  kCausal,         // key slot j ≤ query slot i (bottom-right when Tq < Tk)
  kBidirectional,  // every key
  kPrefixLm,       // both in the prefix (pos_in_doc < prefix_len), or causal
  kSlidingWindow,  // i − j < window (W keys including self) and j − i ≤ window_right
                   // (0: causal; > 0: a two-sided local window, FlashAttention's right bound)
  kChunked,        // causal and ⌊pos_in_doc(j)/chunk⌋ == ⌊pos_in_doc(i)/chunk⌋
};

// How an adapter expects the visibility to be handed to it.
enum class MaskConvention {
  kAdditiveNegInf,     // 0 visible, −inf blocked
  kAdditiveLowest,     // 0 visible, lowest finite value of the dtype blocked
  kAdditiveMinus1e4,   // 0 visible, −1e4 blocked
  kAdditiveMinus1e9,   // 0 visible, −1e9 blocked (saturates to −inf in f16)
  kBoolVisible,        // true = may attend
  kBoolBlocked,        // true = masked out
  kCausalTopLeft,      // no mask tensor; kernel applies j ≤ i (top-left aligned)
  kCausalBottomRight,  // no mask tensor; kernel applies j ≤ i + (Tk − Tq)
  kDescriptor,         // no mask tensor; the visibility descriptor (cases/visibility_descriptor.h)
                       // in the forms the kernel declares (Capabilities::descriptor_forms)
};

// Which of a descriptor kernel's declared layouts a case is handed in
// (reference::CaseForms): kAuto is the kernel's first (varlen when declared, else
// the padded batch). kRagged is the padded batch with every row's keys moved to
// slot 0 and no leftpad_k (flash_attn_with_kvcache's cache_seqlens, ONNX Runtime's
// seqlens_k): the production decoding layout, every row's queries real.
enum class DescriptorLayout { kAuto, kPadded, kRagged, kVarlen };

enum class EncodingKind {
  kNone, kSinusoidal, kLearned, kRope, kAlibi, kT5, kKerple, kXpos, kSandwich
};

enum class RopeLayout {
  kInterleaved,  // pairs (2k, 2k+1): GPT-J, RoFormer, ggml mode 0
  kHalfSplit,    // pairs (k, k + d/2): GPT-NeoX, HF LLaMA, ggml NEOX
};

enum class RopeScaling {
  kNone, kLinear, kNtkAware, kDynamicNtk,
  kYarn,       // ramp linear in the pair index (HF, ggml, the YaRN authors' code)
  kLlama3, kNtkMixed,
  kYarnPaper,  // ramp linear in the rotation count r = L/λ (the YaRN paper's γ(r))
};

enum class KerpleKind { kPower, kLog };

// kExtremeLogits: scores far beyond ±1e4 (below −5e4 in f32 and bf16; up to half
// of f16's 65504 in f16) with ordinary O(1) differences between keys (data.h).
enum class ValueProfile { kNormal, kLargeLogits, kTies, kNearCancellation, kExtremeLogits };

// Rotary embedding parameters. All scalings read `factor` (s) and
// `original_context` (L); the others only where named.
struct RopeSpec {
  RopeLayout layout = RopeLayout::kHalfSplit;
  double base = 10000.0;
  int rotary_dim = 0;  // 0 means head_dim; < head_dim is partial rotary
  RopeScaling scaling = RopeScaling::kNone;
  double factor = 1.0;
  int original_context = 4096;
  bool ntk_exact_exponent = true;  // b·s^(d/(d−2)) when true, b·s otherwise
  double beta_fast = 32.0;         // YaRN correction range (rotations)
  double beta_slow = 1.0;
  double attn_factor = 0.0;        // YaRN magnitude; 0 = 0.1·ln s + 1
  double low_freq_factor = 1.0;    // Llama3
  double high_freq_factor = 4.0;   // Llama3
  double mixed_b = 0.5;            // NTK-mixed: λ1…λm = exp(a·m^b), a from s
  bool log_n = false;              // query scaling max(1, log_L n)
  bool operator==(const RopeSpec&) const = default;
};

struct EncodingSpec {
  EncodingKind kind = EncodingKind::kNone;
  RopeSpec rope;                 // kRope
  int t5_buckets = 32;           // kT5
  int t5_max_distance = 128;
  bool t5_bidirectional = false;
  KerpleKind kerple = KerpleKind::kLog;  // kKerple: r1, r2 per head from seed
  double xpos_scale_base = 512.0;        // kXpos (with RoPE half-split rotation)
  double sandwich_scale = 1.0;           // kSandwich: bias = scale·(p_i·p_j − d/2)/… see reference
  bool operator==(const EncodingSpec&) const = default;
};

// One batch row. Key slots: [left_pad pads][documents...][right_pad pads].
// Query slots are the last `Case::query_len` key slots (self-attention; the
// earlier key slots are the KV cache, so the row's past length is Tk − Tq).
// With Tq > Tk (bottom-right alignment, FlashAttention's rows with no key) the
// first E = Tq − Tk queries are leading queries at slots −E … −1: they continue
// the row's first non-empty document backwards (pos_in_doc −E … −1, so the row has no left
// pad and position_offset ≥ E) and, under every causal kind, see no key.
struct RowSpec {
  int left_pad = 0;
  int right_pad = 0;
  std::vector<int> documents;  // lengths of the documents packed into the row (≥ 1 entry; 0 allowed)
  int prefix_len = 0;          // prefix-LM: tokens of each document that see each other
  int position_offset = 0;     // logical position of each document's first token
  bool operator==(const RowSpec&) const = default;
  int real_tokens() const;
  int slots() const { return left_pad + real_tokens() + right_pad; }
};

struct Case {
  // shapes
  int q_heads = 1;
  int kv_heads = 1;   // divides q_heads (GQA / MQA)
  int head_dim = 8;
  int value_dim = 8;
  int query_len = 1;  // Tq; Tq > Tk adds leading queries (RowSpec), at most kMaxLeadingQueries
  std::vector<RowSpec> rows;  // batch = rows.size(); every row has the same slots() = Tk

  // task visibility
  VisibilityKind visibility = VisibilityKind::kCausal;
  int window = 0;        // kSlidingWindow: W, the keys at or before the query's slot (left = W − 1)
  int window_right = 0;  // kSlidingWindow: R, the keys after it (FlashAttention's right; 0 = causal)
  int chunk = 0;   // kChunked: chunk size

  // decode plan: empty = full prefill only; else prefill Tk − Σchunks, then chunks
  std::vector<int> decode_chunks;

  EncodingSpec encoding;

  // numerics
  Dtype dtype = Dtype::kF32;
  MaskConvention mask = MaskConvention::kAdditiveNegInf;
  double scale = 0.0;    // 0 = 1/sqrt(head_dim)
  double softcap = 0.0;  // 0 = off; else s·tanh(x/s) on scores
  // kDescriptor: the declared layout and page size the case is handed in
  // (reference::CaseForms); kAuto and 0: the kernel's first.
  DescriptorLayout layout = DescriptorLayout::kAuto;
  int page_size = 0;

  // data
  uint64_t seed = 0;
  ValueProfile profile = ValueProfile::kNormal;

  bool operator==(const Case&) const = default;

  int batch() const { return static_cast<int>(rows.size()); }
  int key_len() const { return rows.empty() ? 0 : rows.front().slots(); }
  int rotary_dim() const { return encoding.rope.rotary_dim == 0 ? head_dim : encoding.rope.rotary_dim; }
  double effective_scale() const;
};

// Structural validity (shapes agree, dims even where RoPE needs it, …).
// Returns the first problem as "field: reason", or nullopt when valid; the field
// is the JSON path ("rows[1].documents[0]", "encoding.rope.rotary_dim").
// A causal-flag mask must be expressible by the flag: causal visibility, one
// document per row, no padding, position_offset 0, and for top-left Tq == Tk and
// no decode chunks.
std::optional<std::string> Validate(const Case& c);

// Stable 64-bit hash of the case's JSON form (same on every machine and build).
uint64_t Hash(const Case& c);

// Encodings that rotate or pair dims (RoPE, xPos, sinusoidal, Sandwich) need an even head dim.
bool NeedsEvenHeadDim(EncodingKind kind);
// Encodings with a q/k side (sinusoidal, learned, RoPE, xPos) change q and k themselves.
bool EncodesQk(EncodingKind kind);
std::string Hash8(const Case& c);  // first 8 hex digits, for file names

// The one-line printed form, e.g.
// "Case(B=2,Hq=4,Hkv=2,D=16,Dv=16,Tq=5,Tk=9,vis=causal,rows=[...],enc=rope(...),f16,mask=add-inf,seed=7,profile=normal)"
std::string ToLine(const Case& c);

std::string_view Name(Dtype);
std::string_view Name(VisibilityKind);
std::string_view Name(MaskConvention);
std::string_view Name(EncodingKind);
std::string_view Name(RopeLayout);
std::string_view Name(RopeScaling);
std::string_view Name(KerpleKind);
std::string_view Name(ValueProfile);
std::string_view Name(DescriptorLayout);

bool IsAdditive(MaskConvention m);
bool IsBool(MaskConvention m);
bool IsCausalFlag(MaskConvention m);
// ALiBi, T5, KERPLE, Sandwich: encodings that are a bias on the scores.
bool IsScoreBiasKind(EncodingKind kind);

// Inverse of Name(): the enum whose Name() is `name` (exact, lowercase), or nullopt.
std::optional<Dtype> ParseDtype(std::string_view name);
std::optional<VisibilityKind> ParseVisibilityKind(std::string_view name);
std::optional<MaskConvention> ParseMaskConvention(std::string_view name);
std::optional<EncodingKind> ParseEncodingKind(std::string_view name);
std::optional<RopeLayout> ParseRopeLayout(std::string_view name);
std::optional<RopeScaling> ParseRopeScaling(std::string_view name);
std::optional<KerpleKind> ParseKerpleKind(std::string_view name);
std::optional<ValueProfile> ParseValueProfile(std::string_view name);
std::optional<DescriptorLayout> ParseDescriptorLayout(std::string_view name);

// Every value of each enum, in declaration order (for "everything" capabilities,
// `attncheck list`, and "expected one of …" messages).
inline constexpr std::array<Dtype, 3> kAllDtypes = {Dtype::kF32, Dtype::kF16, Dtype::kBf16};
inline constexpr std::array<VisibilityKind, 5> kAllVisibilityKinds = {
    VisibilityKind::kCausal, VisibilityKind::kBidirectional, VisibilityKind::kPrefixLm,
    VisibilityKind::kSlidingWindow, VisibilityKind::kChunked};
inline constexpr std::array<MaskConvention, 9> kAllMaskConventions = {
    MaskConvention::kAdditiveNegInf,   MaskConvention::kAdditiveLowest,
    MaskConvention::kAdditiveMinus1e4, MaskConvention::kAdditiveMinus1e9,
    MaskConvention::kBoolVisible,      MaskConvention::kBoolBlocked,
    MaskConvention::kCausalTopLeft,    MaskConvention::kCausalBottomRight,
    MaskConvention::kDescriptor};
inline constexpr std::array<EncodingKind, 9> kAllEncodingKinds = {
    EncodingKind::kNone,  EncodingKind::kSinusoidal, EncodingKind::kLearned,
    EncodingKind::kRope,  EncodingKind::kAlibi,      EncodingKind::kT5,
    EncodingKind::kKerple, EncodingKind::kXpos,      EncodingKind::kSandwich};
inline constexpr std::array<RopeLayout, 2> kAllRopeLayouts = {RopeLayout::kInterleaved,
                                                              RopeLayout::kHalfSplit};
inline constexpr std::array<RopeScaling, 8> kAllRopeScalings = {
    RopeScaling::kNone,   RopeScaling::kLinear, RopeScaling::kNtkAware, RopeScaling::kDynamicNtk,
    RopeScaling::kYarn,   RopeScaling::kLlama3, RopeScaling::kNtkMixed, RopeScaling::kYarnPaper};
inline constexpr std::array<KerpleKind, 2> kAllKerpleKinds = {KerpleKind::kPower, KerpleKind::kLog};
inline constexpr std::array<DescriptorLayout, 4> kAllDescriptorLayouts = {
    DescriptorLayout::kAuto, DescriptorLayout::kPadded, DescriptorLayout::kRagged, DescriptorLayout::kVarlen};
inline constexpr std::array<ValueProfile, 5> kAllValueProfiles = {
    ValueProfile::kNormal, ValueProfile::kLargeLogits, ValueProfile::kTies,
    ValueProfile::kNearCancellation, ValueProfile::kExtremeLogits};

// Structural limits Validate enforces so that every index product fits an int.
inline constexpr int kMaxKeyLen = 1 << 20;
inline constexpr int kMaxLeadingQueries = 1 << 12;  // Tq − Tk at most
inline constexpr int kMaxBatch = 1 << 16;
inline constexpr int kMaxHeads = 1 << 12;
inline constexpr int kMaxDim = 1 << 16;
inline constexpr int kMaxPosition = 1 << 30;  // position_offset + key length
inline constexpr int kMaxPageSize = 1 << 16;

}  // namespace attncheck

// fmt::formatter<attncheck::Case> prints ToLine(c).
#include <fmt/format.h>
template <>
struct fmt::formatter<attncheck::Case> : fmt::formatter<std::string_view> {
  auto format(const attncheck::Case& c, format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(attncheck::ToLine(c), ctx);
  }
};
