// The Case value: enum names, structural validation, the stable hash and the
// one-line printed form (DESIGN §2; STYLE "The case is one value").
#include "cases/case.h"

#include <fmt/format.h>

#include <cmath>
#include <span>

#include "cases/case_json.h"
#include "cases/text.h"

namespace attncheck {
namespace {

template <class E>
struct NameEntry {
  E value;
  std::string_view name;
};

constexpr NameEntry<Dtype> kDtypeNames[] = {
    {Dtype::kF32, "f32"}, {Dtype::kF16, "f16"}, {Dtype::kBf16, "bf16"}};
constexpr NameEntry<VisibilityKind> kVisibilityNames[] = {
    {VisibilityKind::kCausal, "causal"},
    {VisibilityKind::kBidirectional, "bidirectional"},
    {VisibilityKind::kPrefixLm, "prefix-lm"},
    {VisibilityKind::kSlidingWindow, "sliding-window"},
    {VisibilityKind::kChunked, "chunked"}};
constexpr NameEntry<MaskConvention> kMaskNames[] = {
    {MaskConvention::kAdditiveNegInf, "add-inf"},
    {MaskConvention::kAdditiveLowest, "add-lowest"},
    {MaskConvention::kAdditiveMinus1e4, "add-1e4"},
    {MaskConvention::kAdditiveMinus1e9, "add-1e9"},
    {MaskConvention::kBoolVisible, "bool-visible"},
    {MaskConvention::kBoolBlocked, "bool-blocked"},
    {MaskConvention::kCausalTopLeft, "causal-top-left"},
    {MaskConvention::kCausalBottomRight, "causal-bottom-right"},
    {MaskConvention::kDescriptor, "descriptor"}};
constexpr NameEntry<EncodingKind> kEncodingNames[] = {
    {EncodingKind::kNone, "none"},     {EncodingKind::kSinusoidal, "sinusoidal"},
    {EncodingKind::kLearned, "learned"}, {EncodingKind::kRope, "rope"},
    {EncodingKind::kAlibi, "alibi"},   {EncodingKind::kT5, "t5"},
    {EncodingKind::kKerple, "kerple"}, {EncodingKind::kXpos, "xpos"},
    {EncodingKind::kSandwich, "sandwich"}};
constexpr NameEntry<RopeLayout> kLayoutNames[] = {{RopeLayout::kInterleaved, "interleaved"},
                                                  {RopeLayout::kHalfSplit, "half-split"}};
constexpr NameEntry<RopeScaling> kScalingNames[] = {
    {RopeScaling::kNone, "none"},         {RopeScaling::kLinear, "linear"},
    {RopeScaling::kNtkAware, "ntk-aware"}, {RopeScaling::kDynamicNtk, "dynamic-ntk"},
    {RopeScaling::kYarn, "yarn"},         {RopeScaling::kYarnPaper, "yarn-paper"},         {RopeScaling::kLlama3, "llama3"},
    {RopeScaling::kNtkMixed, "ntk-mixed"}};
constexpr NameEntry<KerpleKind> kKerpleNames[] = {{KerpleKind::kPower, "power"},
                                                  {KerpleKind::kLog, "log"}};
constexpr NameEntry<ValueProfile> kProfileNames[] = {
    {ValueProfile::kNormal, "normal"},
    {ValueProfile::kLargeLogits, "large-logits"},
    {ValueProfile::kTies, "ties"},
    {ValueProfile::kNearCancellation, "near-cancellation"},
    {ValueProfile::kExtremeLogits, "extreme-logits"}};
constexpr NameEntry<DescriptorLayout> kDescriptorLayoutNames[] = {{DescriptorLayout::kAuto, "auto"},
                                                                  {DescriptorLayout::kPadded, "padded"},
                                                                  {DescriptorLayout::kRagged, "ragged"},
                                                                  {DescriptorLayout::kVarlen, "varlen"}};

template <class E, size_t N>
std::string_view NameIn(const NameEntry<E> (&table)[N], E value) {
  for (const auto& entry : table) {
    if (entry.value == value) return entry.name;
  }
  return "?";
}

template <class E, size_t N>
std::optional<E> ParseIn(const NameEntry<E> (&table)[N], std::string_view name) {
  for (const auto& entry : table) {
    if (entry.name == name) return entry.value;
  }
  return std::nullopt;
}

// "field: reason" builder for Validate.
std::optional<std::string> Problem(std::string_view field, std::string_view reason) {
  return fmt::format("{}: {}", field, reason);
}

std::optional<std::string> ValidateRows(const Case& c, int64_t& key_len) {
  if (c.rows.empty()) return Problem("rows", "must hold at least one row (batch >= 1)");
  if (c.rows.size() > static_cast<size_t>(kMaxBatch)) {
    return Problem("rows", fmt::format("batch {} exceeds {}", c.rows.size(), kMaxBatch));
  }
  key_len = -1;
  for (size_t b = 0; b < c.rows.size(); ++b) {
    const RowSpec& row = c.rows[b];
    const std::string at = fmt::format("rows[{}]", b);
    if (row.left_pad < 0) return Problem(at + ".left_pad", fmt::format("must be >= 0, got {}", row.left_pad));
    if (row.right_pad < 0) return Problem(at + ".right_pad", fmt::format("must be >= 0, got {}", row.right_pad));
    if (row.documents.empty()) {
      return Problem(at + ".documents", "must hold at least one document length (0 allowed)");
    }
    int64_t slots = static_cast<int64_t>(row.left_pad) + row.right_pad;
    for (size_t d = 0; d < row.documents.size(); ++d) {
      if (row.documents[d] < 0) {
        return Problem(fmt::format("{}.documents[{}]", at, d),
                       fmt::format("must be >= 0, got {}", row.documents[d]));
      }
      slots += row.documents[d];
    }
    if (row.prefix_len < 0) return Problem(at + ".prefix_len", fmt::format("must be >= 0, got {}", row.prefix_len));
    if (row.position_offset < 0) {
      return Problem(at + ".position_offset", fmt::format("must be >= 0, got {}", row.position_offset));
    }
    if (slots < 1) return Problem(at, "key length (left_pad + documents + right_pad) must be >= 1");
    if (slots > kMaxKeyLen) return Problem(at, fmt::format("key length {} exceeds {}", slots, kMaxKeyLen));
    if (static_cast<int64_t>(row.position_offset) + slots > kMaxPosition) {
      return Problem(at + ".position_offset",
                     fmt::format("position_offset + key length must be <= {}", kMaxPosition));
    }
    if (key_len < 0) {
      key_len = slots;
    } else if (slots != key_len) {
      return Problem(at, fmt::format("has {} key slots but rows[0] has {} (every row needs the same "
                                     "left_pad + documents + right_pad)",
                                     slots, key_len));
    }
  }
  return std::nullopt;
}

std::optional<std::string> ValidateEncoding(const Case& c) {
  const EncodingSpec& e = c.encoding;
  if (NeedsEvenHeadDim(e.kind) && c.head_dim % 2 != 0) {
    return Problem("head_dim", fmt::format("must be even for {} encoding, got {}", Name(e.kind), c.head_dim));
  }
  if (e.kind == EncodingKind::kRope || e.kind == EncodingKind::kXpos) {
    const RopeSpec& r = e.rope;
    if (!std::isfinite(r.base) || r.base <= 1.0) {
      return Problem("encoding.rope.base", fmt::format("must be a finite number > 1, got {}", r.base));
    }
    if (r.rotary_dim < 0 || r.rotary_dim > c.head_dim || r.rotary_dim % 2 != 0) {
      return Problem("encoding.rope.rotary_dim",
                     fmt::format("must be even and in [0, head_dim={}] (0 = head_dim), got {}",
                                 c.head_dim, r.rotary_dim));
    }
    if (r.original_context < 1) {
      return Problem("encoding.rope.original_context", fmt::format("must be >= 1, got {}", r.original_context));
    }
    if (e.kind == EncodingKind::kXpos) {
      if (r.scaling != RopeScaling::kNone) return Problem("encoding.rope.scaling", "must be none for xpos");
      if (!std::isfinite(e.xpos_scale_base) || e.xpos_scale_base <= 0) {
        return Problem("encoding.xpos_scale_base", fmt::format("must be > 0, got {}", e.xpos_scale_base));
      }
    }
    if (r.scaling != RopeScaling::kNone && (!std::isfinite(r.factor) || r.factor < 1.0)) {
      return Problem("encoding.rope.factor", fmt::format("must be >= 1 for {} scaling, got {}",
                                                         Name(r.scaling), r.factor));
    }
    if (r.scaling == RopeScaling::kYarn || r.scaling == RopeScaling::kYarnPaper) {
      if (!std::isfinite(r.beta_slow) || !std::isfinite(r.beta_fast) || r.beta_slow <= 0 ||
          r.beta_fast <= r.beta_slow) {
        return Problem("encoding.rope.beta_fast",
                       fmt::format("need beta_fast > beta_slow > 0, got {} and {}", r.beta_fast, r.beta_slow));
      }
      if (!std::isfinite(r.attn_factor) || r.attn_factor < 0) {
        return Problem("encoding.rope.attn_factor", fmt::format("must be >= 0, got {}", r.attn_factor));
      }
    }
    if (r.scaling == RopeScaling::kLlama3) {
      if (!std::isfinite(r.low_freq_factor) || !std::isfinite(r.high_freq_factor) ||
          r.low_freq_factor <= 0 || r.high_freq_factor <= r.low_freq_factor) {
        return Problem("encoding.rope.high_freq_factor",
                       fmt::format("need high_freq_factor > low_freq_factor > 0, got {} and {}",
                                   r.high_freq_factor, r.low_freq_factor));
      }
    }
    if (r.scaling == RopeScaling::kNtkMixed && (!std::isfinite(r.mixed_b) || r.mixed_b <= 0)) {
      return Problem("encoding.rope.mixed_b", fmt::format("must be > 0, got {}", r.mixed_b));
    }
  }
  if (e.kind == EncodingKind::kT5) {
    if (e.t5_buckets < 4 || e.t5_buckets > kMaxDim) {
      return Problem("encoding.t5_buckets", fmt::format("must be in [4, {}], got {}", kMaxDim, e.t5_buckets));
    }
    // max_exact = buckets/2 (buckets/4 bidirectional); the log range needs max_distance > it.
    if (e.t5_max_distance <= e.t5_buckets / 2) {
      return Problem("encoding.t5_max_distance",
                     fmt::format("must be > t5_buckets/2 = {}, got {}", e.t5_buckets / 2, e.t5_max_distance));
    }
  }
  if (e.kind == EncodingKind::kSandwich && (!std::isfinite(e.sandwich_scale) || e.sandwich_scale <= 0)) {
    return Problem("encoding.sandwich_scale", fmt::format("must be > 0, got {}", e.sandwich_scale));
  }
  return std::nullopt;
}

// Tq > Tk: the leading queries continue the first document backwards, so every
// row starts with it (no left pad) and its positions stay >= 0; a decode plan
// appends keys, which leading queries have none of.
std::optional<std::string> ValidateLeadingQueries(const Case& c, int64_t key_len) {
  const int64_t leading = c.query_len - key_len;
  if (leading <= 0) return std::nullopt;
  for (size_t b = 0; b < c.rows.size(); ++b) {
    const RowSpec& row = c.rows[b];
    if (row.left_pad != 0) {
      return Problem(fmt::format("rows[{}].left_pad", b),
                     fmt::format("must be 0 when query_len {} > key length {}, got {}", c.query_len, key_len,
                                 row.left_pad));
    }
    if (row.position_offset < leading) {
      return Problem(fmt::format("rows[{}].position_offset", b),
                     fmt::format("must be >= query_len - key length = {} (the leading queries' positions), got {}",
                                 leading, row.position_offset));
    }
  }
  if (!c.decode_chunks.empty()) {
    return Problem("decode_chunks", fmt::format("must be empty when query_len {} > key length {}", c.query_len,
                                                key_len));
  }
  return std::nullopt;
}

std::optional<std::string> ValidateCausalFlag(const Case& c, int64_t key_len) {
  const std::string_view flag = Name(c.mask);
  if (c.visibility != VisibilityKind::kCausal) {
    return Problem("mask", fmt::format("{} can only express causal visibility, got {}", flag, Name(c.visibility)));
  }
  for (size_t b = 0; b < c.rows.size(); ++b) {
    const RowSpec& row = c.rows[b];
    const int64_t offset = std::max<int64_t>(0, c.query_len - key_len);  // the leading queries' (Tq > Tk)
    if (row.left_pad != 0 || row.right_pad != 0 || row.documents.size() != 1 || row.position_offset != offset) {
      return Problem(fmt::format("rows[{}]", b),
                     fmt::format("mask {} needs one document, no padding and position_offset {}{}", flag, offset,
                                 offset > 0 ? " (query_len - key length)" : ""));
    }
  }
  if (c.mask == MaskConvention::kCausalTopLeft) {
    if (c.query_len != key_len) {
      return Problem("query_len", fmt::format("mask {} needs query_len == key length {}, got {}", flag,
                                              key_len, c.query_len));
    }
    if (!c.decode_chunks.empty()) {
      return Problem("decode_chunks", fmt::format("mask {} cannot express decode chunks", flag));
    }
  }
  return std::nullopt;
}

// Shortest round-trip form of a double ("10000", "1.5", "1e+06").
std::string Num(double x) { return fmt::format("{}", x); }

std::string IntList(const std::vector<int>& values) { return fmt::format("[{}]", fmt::join(values, ",")); }

std::string RowLine(const RowSpec& row) {
  std::string s = "{";
  if (row.left_pad != 0) s += fmt::format("lp={},", row.left_pad);
  s += "docs=" + IntList(row.documents);
  if (row.right_pad != 0) s += fmt::format(",rp={}", row.right_pad);
  if (row.prefix_len != 0) s += fmt::format(",prefix={}", row.prefix_len);
  if (row.position_offset != 0) s += fmt::format(",off={}", row.position_offset);
  return s + "}";
}

// Every RoPE field that differs from its default; layout, base and rotary dim
// are always shown when the encoding rotates (they define the rotation).
void AppendRope(const RopeSpec& r, bool rotates, std::vector<std::string>& parts) {
  const RopeSpec d;
  if (rotates || r.layout != d.layout) parts.push_back(std::string(Name(r.layout)));
  if (rotates || r.base != d.base) parts.push_back("base=" + Num(r.base));
  if (r.rotary_dim != d.rotary_dim) parts.push_back(fmt::format("rd={}", r.rotary_dim));
  if (r.scaling != d.scaling) parts.push_back("scaling=" + std::string(Name(r.scaling)));
  if (r.factor != d.factor) parts.push_back("factor=" + Num(r.factor));
  if (r.original_context != d.original_context) parts.push_back(fmt::format("L={}", r.original_context));
  if (r.ntk_exact_exponent != d.ntk_exact_exponent) {
    parts.push_back(r.ntk_exact_exponent ? "ntk-exact" : "ntk-approx");
  }
  if (r.beta_fast != d.beta_fast) parts.push_back("beta_fast=" + Num(r.beta_fast));
  if (r.beta_slow != d.beta_slow) parts.push_back("beta_slow=" + Num(r.beta_slow));
  if (r.attn_factor != d.attn_factor) parts.push_back("attn_factor=" + Num(r.attn_factor));
  if (r.low_freq_factor != d.low_freq_factor) parts.push_back("low=" + Num(r.low_freq_factor));
  if (r.high_freq_factor != d.high_freq_factor) parts.push_back("high=" + Num(r.high_freq_factor));
  if (r.mixed_b != d.mixed_b) parts.push_back("b=" + Num(r.mixed_b));
  if (r.log_n != d.log_n) parts.push_back(r.log_n ? "log-n" : "no-log-n");
}

std::string EncodingLine(const EncodingSpec& e) {
  const EncodingSpec d;
  std::vector<std::string> parts;
  AppendRope(e.rope, e.kind == EncodingKind::kRope || e.kind == EncodingKind::kXpos, parts);
  if (e.t5_buckets != d.t5_buckets || e.kind == EncodingKind::kT5) {
    parts.push_back(fmt::format("buckets={}", e.t5_buckets));
  }
  if (e.t5_max_distance != d.t5_max_distance || e.kind == EncodingKind::kT5) {
    parts.push_back(fmt::format("max_distance={}", e.t5_max_distance));
  }
  if (e.t5_bidirectional != d.t5_bidirectional) {
    parts.push_back(e.t5_bidirectional ? "bidirectional" : "unidirectional");
  }
  if (e.kerple != d.kerple || e.kind == EncodingKind::kKerple) parts.push_back(std::string(Name(e.kerple)));
  if (e.xpos_scale_base != d.xpos_scale_base || e.kind == EncodingKind::kXpos) {
    parts.push_back("scale_base=" + Num(e.xpos_scale_base));
  }
  if (e.sandwich_scale != d.sandwich_scale || e.kind == EncodingKind::kSandwich) {
    parts.push_back("scale=" + Num(e.sandwich_scale));
  }
  std::string s(Name(e.kind));
  if (!parts.empty()) s += fmt::format("({})", fmt::join(parts, ","));
  return s;
}

}  // namespace

int RowSpec::real_tokens() const {
  int64_t total = 0;
  for (int length : documents) total += length;
  return static_cast<int>(total);
}

double Case::effective_scale() const {
  return scale == 0.0 ? 1.0 / std::sqrt(static_cast<double>(head_dim)) : scale;
}

std::optional<std::string> Validate(const Case& c) {
  int64_t key_len = 0;
  if (auto problem = ValidateRows(c, key_len)) return problem;
  if (c.q_heads < 1 || c.q_heads > kMaxHeads) {
    return Problem("q_heads", fmt::format("must be in [1, {}], got {}", kMaxHeads, c.q_heads));
  }
  if (c.kv_heads < 1 || c.kv_heads > kMaxHeads) {
    return Problem("kv_heads", fmt::format("must be in [1, {}], got {}", kMaxHeads, c.kv_heads));
  }
  if (c.q_heads % c.kv_heads != 0) {
    return Problem("kv_heads", fmt::format("must divide q_heads={}, got {}", c.q_heads, c.kv_heads));
  }
  if (c.head_dim < 2 || c.head_dim > kMaxDim) {
    return Problem("head_dim", fmt::format("must be in [2, {}], got {}", kMaxDim, c.head_dim));
  }
  if (c.value_dim < 1 || c.value_dim > kMaxDim) {
    return Problem("value_dim", fmt::format("must be in [1, {}], got {}", kMaxDim, c.value_dim));
  }
  if (c.query_len < 1 || c.query_len > key_len + kMaxLeadingQueries) {
    return Problem("query_len", fmt::format("must be in [1, key length + {} = {}], got {}", kMaxLeadingQueries,
                                            key_len + kMaxLeadingQueries, c.query_len));
  }
  if (const std::optional<std::string> problem = ValidateLeadingQueries(c, key_len)) return problem;
  // Every product the reference indexes with must fit an int.
  const int64_t batch = static_cast<int64_t>(c.rows.size());
  const int64_t width = std::max(c.head_dim, c.value_dim);
  if (batch * c.q_heads * c.query_len * key_len > INT32_MAX ||
      batch * c.q_heads * key_len * width > INT32_MAX) {
    return Problem("rows", "case too large: batch·heads·Tq·Tk and batch·heads·Tk·dim must fit in 2^31");
  }
  if (c.window < 0) return Problem("window", fmt::format("must be >= 0, got {}", c.window));
  if (c.window_right < 0) return Problem("window_right", fmt::format("must be >= 0, got {}", c.window_right));
  if (c.window_right > 0 && c.visibility != VisibilityKind::kSlidingWindow) {
    return Problem("window_right", fmt::format("{} needs sliding-window visibility, got {}", c.window_right,
                                               Name(c.visibility)));
  }
  if (c.chunk < 0) return Problem("chunk", fmt::format("must be >= 0, got {}", c.chunk));
  if (c.visibility == VisibilityKind::kSlidingWindow && c.window < 1) {
    return Problem("window", fmt::format("must be >= 1 for sliding-window visibility, got {}", c.window));
  }
  if (c.visibility == VisibilityKind::kChunked && c.chunk < 1) {
    return Problem("chunk", fmt::format("must be >= 1 for chunked visibility, got {}", c.chunk));
  }
  int64_t decoded = 0;
  for (size_t i = 0; i < c.decode_chunks.size(); ++i) {
    if (c.decode_chunks[i] < 1) {
      return Problem(fmt::format("decode_chunks[{}]", i), fmt::format("must be >= 1, got {}", c.decode_chunks[i]));
    }
    decoded += c.decode_chunks[i];
  }
  if (decoded > key_len) {
    return Problem("decode_chunks", fmt::format("sum {} exceeds key length {}", decoded, key_len));
  }
  if (auto problem = ValidateEncoding(c)) return problem;
  if (!std::isfinite(c.scale) || c.scale < 0) {
    return Problem("scale", fmt::format("must be >= 0 (0 = 1/sqrt(head_dim)), got {}", c.scale));
  }
  if (!std::isfinite(c.softcap) || c.softcap < 0) {
    return Problem("softcap", fmt::format("must be >= 0 (0 = off), got {}", c.softcap));
  }
  if (c.mask != MaskConvention::kDescriptor && (c.layout != DescriptorLayout::kAuto || c.page_size != 0)) {
    return Problem(c.layout != DescriptorLayout::kAuto ? "layout" : "page_size",
                   "a descriptor layout needs the descriptor mask convention");
  }
  if (c.page_size < 0 || c.page_size > kMaxPageSize) {
    return Problem("page_size", fmt::format("must be 0 (the kernel's first) to {}, got {}", kMaxPageSize, c.page_size));
  }
  if (IsCausalFlag(c.mask)) return ValidateCausalFlag(c, key_len);
  return std::nullopt;
}

uint64_t Hash(const Case& c) {
  // FNV-1a 64 over the canonical JSON dump (sorted keys, fixed number format).
  return Fnv1a64(ToJson(c).dump());
}

bool NeedsEvenHeadDim(EncodingKind kind) {
  return kind == EncodingKind::kRope || kind == EncodingKind::kXpos || kind == EncodingKind::kSinusoidal ||
         kind == EncodingKind::kSandwich;
}

bool EncodesQk(EncodingKind kind) {
  return kind == EncodingKind::kSinusoidal || kind == EncodingKind::kLearned || kind == EncodingKind::kRope ||
         kind == EncodingKind::kXpos;
}

std::string Hash8(const Case& c) { return fmt::format("{:016x}", Hash(c)).substr(0, 8); }

std::string ToLine(const Case& c) {
  std::string s = fmt::format("Case(B={},Hq={},Hkv={},D={},Dv={},Tq={},Tk={},vis={}", c.batch(), c.q_heads,
                              c.kv_heads, c.head_dim, c.value_dim, c.query_len, c.key_len(),
                              Name(c.visibility));
  if (c.window != 0) s += fmt::format(",W={}", c.window);
  if (c.window_right != 0) s += fmt::format(",R={}", c.window_right);
  if (c.chunk != 0) s += fmt::format(",chunk={}", c.chunk);
  std::vector<std::string> rows;
  rows.reserve(c.rows.size());
  for (const RowSpec& row : c.rows) rows.push_back(RowLine(row));
  s += fmt::format(",rows=[{}]", fmt::join(rows, ","));
  if (!c.decode_chunks.empty()) s += ",decode=" + IntList(c.decode_chunks);
  s += ",enc=" + EncodingLine(c.encoding);
  s += fmt::format(",{},mask={}", Name(c.dtype), Name(c.mask));
  if (c.scale != 0.0) s += ",scale=" + Num(c.scale);
  if (c.softcap != 0.0) s += ",softcap=" + Num(c.softcap);
  if (c.layout != DescriptorLayout::kAuto) s += fmt::format(",layout={}", Name(c.layout));
  if (c.page_size != 0) s += fmt::format(",page_size={}", c.page_size);
  s += fmt::format(",seed={},profile={})", c.seed, Name(c.profile));
  return s;
}

std::string_view Name(Dtype v) { return NameIn(kDtypeNames, v); }
std::string_view Name(VisibilityKind v) { return NameIn(kVisibilityNames, v); }
std::string_view Name(MaskConvention v) { return NameIn(kMaskNames, v); }
std::string_view Name(EncodingKind v) { return NameIn(kEncodingNames, v); }
std::string_view Name(RopeLayout v) { return NameIn(kLayoutNames, v); }
std::string_view Name(RopeScaling v) { return NameIn(kScalingNames, v); }
std::string_view Name(KerpleKind v) { return NameIn(kKerpleNames, v); }
std::string_view Name(ValueProfile v) { return NameIn(kProfileNames, v); }
std::string_view Name(DescriptorLayout v) { return NameIn(kDescriptorLayoutNames, v); }

std::optional<Dtype> ParseDtype(std::string_view name) { return ParseIn(kDtypeNames, name); }
std::optional<VisibilityKind> ParseVisibilityKind(std::string_view name) { return ParseIn(kVisibilityNames, name); }
std::optional<MaskConvention> ParseMaskConvention(std::string_view name) { return ParseIn(kMaskNames, name); }
std::optional<EncodingKind> ParseEncodingKind(std::string_view name) { return ParseIn(kEncodingNames, name); }
std::optional<RopeLayout> ParseRopeLayout(std::string_view name) { return ParseIn(kLayoutNames, name); }
std::optional<RopeScaling> ParseRopeScaling(std::string_view name) { return ParseIn(kScalingNames, name); }
std::optional<KerpleKind> ParseKerpleKind(std::string_view name) { return ParseIn(kKerpleNames, name); }
std::optional<ValueProfile> ParseValueProfile(std::string_view name) { return ParseIn(kProfileNames, name); }
std::optional<DescriptorLayout> ParseDescriptorLayout(std::string_view name) {
  return ParseIn(kDescriptorLayoutNames, name);
}

bool IsAdditive(MaskConvention m) {
  return m == MaskConvention::kAdditiveNegInf || m == MaskConvention::kAdditiveLowest ||
         m == MaskConvention::kAdditiveMinus1e4 || m == MaskConvention::kAdditiveMinus1e9;
}
bool IsBool(MaskConvention m) { return m == MaskConvention::kBoolVisible || m == MaskConvention::kBoolBlocked; }
bool IsScoreBiasKind(EncodingKind kind) {
  return kind == EncodingKind::kAlibi || kind == EncodingKind::kT5 || kind == EncodingKind::kKerple ||
         kind == EncodingKind::kSandwich;
}

bool IsCausalFlag(MaskConvention m) {
  return m == MaskConvention::kCausalTopLeft || m == MaskConvention::kCausalBottomRight;
}

}  // namespace attncheck
