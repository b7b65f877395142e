// The `reference` adapter: reads the buffers back into double tensors, applies
// the reference positional stage and score bias itself, decodes the mask it was
// handed into the visibility relation, and runs reference::AttentionCore<double>.
#include "adapters/reference/reference_adapter.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "adapters/kv_cache.h"
#include "reference/attention.h"
#include "reference/mask.h"
#include "reference/positional.h"

namespace attncheck::adapters {
namespace {

TensorD ToTensor(std::span<const float> values, int n0, int n1, int n2, int n3) {
  TensorD t(n0, n1, n2, n3);
  for (size_t i = 0; i < t.data.size(); ++i) t.data[i] = values[i];
  return t;
}

// The visibility [B, Tq, Tk] and the additive values [B, Tq, Tk] the mask carries.
// Additive: an entry equal to the convention's fill (or −inf) is blocked, any
// other value is added to the score (0, or a bias the harness folded in).
// Causal flags: the flag's pattern over the call's (or session step's) Tq × Tk.
struct DecodedMask {
  std::vector<uint8_t> visible;
  std::vector<double> additive;  // empty when all zero
};

DecodedMask DecodeMask(const MaskArgs& mask, Dtype dtype, int batch, int tq, int tk) {
  DecodedMask decoded;
  const size_t n = static_cast<size_t>(batch) * tq * tk;
  decoded.visible.assign(n, 0);
  const MaskConvention convention = mask.convention;
  if (IsAdditive(convention)) {
    const float fill = static_cast<float>(reference::AdditiveFill(convention, dtype));
    decoded.additive.assign(n, 0.0);
    for (size_t e = 0; e < n; ++e) {
      const float value = mask.additive[e];
      const bool blocked = value == fill || value == -std::numeric_limits<float>::infinity();
      decoded.visible[e] = blocked ? 0 : 1;
      decoded.additive[e] = blocked ? 0.0 : value;
    }
  } else if (IsBool(convention)) {
    const bool polarity = convention == MaskConvention::kBoolVisible;
    for (size_t e = 0; e < n; ++e) decoded.visible[e] = (mask.boolean[e] != 0) == polarity ? 1 : 0;
  } else {
    // a flag means the same in a session step as in one call (include/attncheck/adapter.h)
    const std::vector<uint8_t> pattern = reference::CausalFlagPattern(convention, tq, tk);  // [Tq, Tk]
    for (int b = 0; b < batch; ++b)
      std::copy(pattern.begin(), pattern.end(), decoded.visible.begin() + static_cast<ptrdiff_t>(b) * tq * tk);
  }
  return decoded;
}

// Everything one attention call needs, in double.
struct Problem {
  const KernelSpec* spec = nullptr;
  TensorD q, k, v;  // [B, Hq, Tq, D], [B, Hkv, Tk, D], [B, Hkv, Tk, Dv]
  std::span<const int> query_positions, key_positions;  // [B, Tq], [B, Tk]
  bool apply_positional = false, apply_bias = false;
  double scale = 0.0;
  int current_length = 1;
};

void Solve(Problem& p, const MaskArgs& mask, std::span<float> out) {
  const KernelSpec& c = *p.spec;
  const int batch = p.q.shape[0], hq = p.q.shape[1], tq = p.q.shape[2], tk = p.k.shape[2];
  if (p.apply_positional) {
    reference::ApplyPositional(c, reference::Side::kQuery, p.q, p.query_positions, p.current_length);
    reference::ApplyPositional(c, reference::Side::kKey, p.k, p.key_positions, p.current_length);
  }
  const DecodedMask decoded = DecodeMask(mask, c.dtype, batch, tq, tk);
  TensorD bias(batch, hq, tq, tk);  // [B, Hq, Tq, Tk]
  bool has_bias = false;
  for (int b = 0; b < batch; ++b)
    for (int h = 0; h < hq; ++h)
      for (int i = 0; i < tq; ++i)
        for (int j = 0; j < tk; ++j) {
          double value = 0.0;
          if (!decoded.additive.empty()) value += decoded.additive[(static_cast<size_t>(b) * tq + i) * tk + j];
          if (p.apply_bias) {
            value += reference::ScoreBias(c, h, p.query_positions[static_cast<size_t>(b) * tq + i],
                                          p.key_positions[static_cast<size_t>(b) * tk + j]);
          }
          bias.at(b, h, i, j) = value;
          has_bias = has_bias || value != 0.0;
        }
  const reference::AttentionResult result = reference::AttentionCore<double>(
      p.q, p.k, p.v, decoded.visible, has_bias ? &bias : nullptr, p.scale, c.softcap);
  for (size_t e = 0; e < result.out.data.size(); ++e) out[e] = static_cast<float>(result.out.data[e]);
}

class ReferenceSession final : public Session {
 public:
  explicit ReferenceSession(const SessionArgs& args)
      : args_(args), cache_(args.batch, args.kv_heads, args.head_dim, args.value_dim) {}

  void append(std::span<const float> k, std::span<const float> v, std::span<const int> positions,
              int n) override {
    cache_.Append(k, v, positions, n);
  }

  void attend(std::span<const float> q, std::span<const int> positions, int tq, const MaskArgs& mask,
              std::span<float> out) override {
    const int batch = args_.batch, hkv = args_.kv_heads, length = cache_.length();
    const std::vector<int> key_positions = cache_.AllPositions();  // [B, Tk]
    Problem p;
    p.spec = &args_.spec;
    p.q = ToTensor(q, batch, args_.q_heads, tq, args_.head_dim);
    p.k = ToTensor(cache_.AllKeys(), batch, hkv, length, args_.head_dim);
    p.v = ToTensor(cache_.AllValues(), batch, hkv, length, args_.value_dim);
    p.query_positions = positions;
    p.key_positions = key_positions;
    p.apply_positional = args_.apply_positional;
    p.apply_bias = args_.apply_bias;
    p.scale = args_.scale;
    p.current_length = args_.current_length;
    Solve(p, mask, out);
  }

 private:
  SessionArgs args_;
  KvCache<float> cache_;  // raw (unencoded) keys, values and positions so far
};

class ReferenceAdapter final : public Adapter {
 public:
  std::string name() const override { return "reference"; }
  std::string description() const override {
    return "the double-precision reference model itself (owns every stage)";
  }
  Capabilities capabilities() const override {
    Capabilities caps;
    caps.owns_rope = true;
    caps.owns_bias = true;
    caps.has_rope_stage = true;
    caps.has_session = true;
    caps.session_rope_as_call = true;  // the same double rotation in a session as in a call
    caps.dtypes = {Dtype::kF32, Dtype::kF16, Dtype::kBf16};
    caps.masks = {MaskConvention::kAdditiveNegInf, MaskConvention::kAdditiveLowest,
                  MaskConvention::kAdditiveMinus1e4, MaskConvention::kAdditiveMinus1e9,
                  MaskConvention::kBoolVisible, MaskConvention::kBoolBlocked,
                  MaskConvention::kCausalTopLeft, MaskConvention::kCausalBottomRight};
    caps.masked_rows = MaskedRowPolicy::kZeros;
    caps.encodings = {EncodingKind::kNone, EncodingKind::kSinusoidal, EncodingKind::kLearned,
                      EncodingKind::kRope, EncodingKind::kAlibi, EncodingKind::kT5,
                      EncodingKind::kKerple, EncodingKind::kXpos, EncodingKind::kSandwich};
    caps.rope_layouts = {RopeLayout::kHalfSplit, RopeLayout::kInterleaved};
    caps.rope_scalings = {RopeScaling::kNone, RopeScaling::kLinear, RopeScaling::kNtkAware,
                          RopeScaling::kDynamicNtk, RopeScaling::kYarn, RopeScaling::kLlama3,
                          RopeScaling::kNtkMixed, RopeScaling::kYarnPaper};
    caps.gqa = true;
    caps.softcap = true;
    caps.value_dim_differs = true;
    caps.queries_beyond_keys = true;  // Tq > Tk: rows before every key follow masked_rows
    return caps;
  }

  void attention(const AttentionArgs& args) override {
    Problem p;
    p.spec = &args.spec;
    p.q = ToTensor(args.q, args.batch, args.q_heads, args.tq, args.head_dim);
    p.k = ToTensor(args.k, args.batch, args.kv_heads, args.tk, args.head_dim);
    p.v = ToTensor(args.v, args.batch, args.kv_heads, args.tk, args.value_dim);
    p.query_positions = args.query_positions;
    p.key_positions = args.key_positions;
    p.apply_positional = args.apply_positional;
    p.apply_bias = args.apply_bias;
    p.scale = args.scale;
    p.current_length = args.current_length;
    Solve(p, args.mask, args.out);
  }

  // Rotation alone: the key-side encoding (no query-only log-n scale).
  void rope(const RopeArgs& args) override {
    TensorD x = ToTensor(args.x, args.batch, args.heads, args.tokens, args.head_dim);
    reference::ApplyPositional(args.spec, reference::Side::kKey, x, args.positions, args.current_length);
    for (size_t e = 0; e < x.data.size(); ++e) args.out[e] = static_cast<float>(x.data[e]);
  }

  std::unique_ptr<Session> open_session(const SessionArgs& args) override {
    return std::make_unique<ReferenceSession>(args);
  }
};

}  // namespace
}  // namespace attncheck::adapters

namespace attncheck {

std::unique_ptr<Adapter> MakeReferenceAdapter() { return std::make_unique<adapters::ReferenceAdapter>(); }

}  // namespace attncheck
