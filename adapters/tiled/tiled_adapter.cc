// The tiled adapters (tiled_adapter.h): FlashAttention-2 forward (Dao 2023,
// Algorithm 1) on the CPU, one query-row block × key block at a time:
//   S_ij = scale · Σ_d q_id k_jd  (float accumulation of storage values), softcap
//   m_new = max(m, max_j S_ij);  l = l·e^(m − m_new) + Σ_j e^(S_ij − m_new)
//   acc  = acc·e^(m − m_new) + Σ_j e^(S_ij − m_new) v_j
//   out  = round_S(acc / l), or 0 when l = 0 (no visible key: declared policy zeros)
// Blocked keys are skipped, never multiplied by 0, so NaN in a masked K or V
// cannot leak. RoPE runs in float (angle = float(p)·float(theta_k)) and the
// rotated q and k are stored back in the storage type, as a separate rope kernel
// writing the KV cache would.
#include "adapters/tiled/tiled_adapter.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>
#include <vector>

#include <Eigen/Core>
#include <fmt/format.h>

#include "adapters/descriptor_rule.h"
#include "adapters/float_rope.h"
#include "adapters/kv_cache.h"
#include "reference/rope_scaling.h"

namespace attncheck::adapters {
namespace {

constexpr int kBlock = 64;     // keys per block (Bc)
constexpr int kRowBlock = 16;  // query rows per block (Br)
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

template <class S>
constexpr Dtype kStorageDtype = std::is_same_v<S, float>         ? Dtype::kF32
                                : std::is_same_v<S, Eigen::half> ? Dtype::kF16
                                                                 : Dtype::kBf16;

template <class S>
std::vector<S> ToStorage(std::span<const float> values) {
  std::vector<S> stored(values.size());
  for (size_t e = 0; e < values.size(); ++e) stored[e] = static_cast<S>(values[e]);
  return stored;
}


// Which keys a query may read: a bool mask [B, Tq, Tk], the causal flag
// j ≤ i + offset (offset 0 top-left, Tk − Tq bottom-right), or a descriptor.
struct KeyFilter {
  MaskConvention convention = MaskConvention::kBoolVisible;
  std::span<const uint8_t> boolean;
  DescriptorRule descriptor;
  int tq = 0, tk = 0, offset = 0;

  bool Visible(int b, int i, int j) const {
    switch (convention) {
      case MaskConvention::kBoolVisible:
        return boolean[(static_cast<size_t>(b) * tq + i) * tk + j] != 0;
      case MaskConvention::kBoolBlocked:
        return boolean[(static_cast<size_t>(b) * tq + i) * tk + j] == 0;
      case MaskConvention::kDescriptor:
        return descriptor.Visible(b, i, j);
      default:
        return j <= i + offset;
    }
  }
  // Whether any (i, j) of rows [i0, i1) × keys [j0, j1) is visible.
  bool AnyVisible(int b, int i0, int i1, int j0, int j1) const {
    if (IsCausalFlag(convention)) return j0 <= i1 - 1 + offset;
    if (convention == MaskConvention::kDescriptor) return descriptor.AnyVisible(b, i0, i1, j0, j1);
    for (int i = i0; i < i1; ++i)
      for (int j = j0; j < j1; ++j)
        if (Visible(b, i, j)) return true;
    return false;
  }
};

KeyFilter MakeKeyFilter(const MaskArgs& mask, int tq, int tk) {
  KeyFilter filter;
  filter.convention = mask.convention;
  filter.boolean = mask.boolean;
  filter.tq = tq;
  filter.tk = tk;
  switch (mask.convention) {
    case MaskConvention::kBoolVisible:
    case MaskConvention::kBoolBlocked:
      break;
    case MaskConvention::kCausalTopLeft:
      filter.offset = 0;  // j ≤ i in a session step too (include/attncheck/adapter.h)
      break;
    case MaskConvention::kCausalBottomRight:
      filter.offset = tk - tq;
      break;
    case MaskConvention::kDescriptor:
      if (mask.descriptor == nullptr) throw std::invalid_argument("tiled: descriptor convention without a descriptor");
      if (mask.descriptor->varlen() || mask.descriptor->paged.page_size > 0) {
        throw std::invalid_argument("tiled: varlen and paged descriptors are not taken");
      }
      filter.descriptor = {mask.descriptor, tq, tk, {}};
      break;
    default:
      throw std::invalid_argument(fmt::format("tiled: mask convention {} not accepted", Name(mask.convention)));
  }
  return filter;
}

struct Shapes {
  int batch, q_heads, kv_heads, tq, tk, head_dim, value_dim;
};

// The forward pass. q [B, Hq, Tq, D] in S; key_block(b, kv) → [Tk, D] in S;
// value_block(b, kv) → [Tk, Dv] in S; out [B, Hq, Tq, Dv] in float (values of S).
template <class S, class KeyBlock, class ValueBlock>
void FlashForward(const Shapes& n, const S* q, KeyBlock key_block, ValueBlock value_block,
                  const KeyFilter& filter, float scale, float softcap, std::span<float> out) {
  const int group = n.q_heads / n.kv_heads;
  std::vector<float> m(kRowBlock), l(kRowBlock), acc(static_cast<size_t>(kRowBlock) * n.value_dim);
  std::vector<float> scores(kBlock);
  for (int b = 0; b < n.batch; ++b) {
    for (int h = 0; h < n.q_heads; ++h) {
      const int kv = h / group;  // GQA
      const S* keys = key_block(b, kv);
      const S* values = value_block(b, kv);
      const S* queries = q + (static_cast<size_t>(b) * n.q_heads + h) * n.tq * n.head_dim;
      for (int r0 = 0; r0 < n.tq; r0 += kRowBlock) {
        const int r1 = std::min(n.tq, r0 + kRowBlock);
        std::fill(m.begin(), m.end(), kNegInf);
        std::fill(l.begin(), l.end(), 0.0f);
        std::fill(acc.begin(), acc.end(), 0.0f);
        for (int c0 = 0; c0 < n.tk; c0 += kBlock) {
          const int c1 = std::min(n.tk, c0 + kBlock);
          if (!filter.AnyVisible(b, r0, r1, c0, c1)) continue;  // fully masked block: skipped
          for (int i = r0; i < r1; ++i) {
            const S* query = queries + static_cast<size_t>(i) * n.head_dim;
            float block_max = kNegInf;
            for (int j = c0; j < c1; ++j) {
              if (!filter.Visible(b, i, j)) {
                scores[j - c0] = kNegInf;
                continue;
              }
              const S* key = keys + static_cast<size_t>(j) * n.head_dim;
              float dot = 0.0f;
              for (int d = 0; d < n.head_dim; ++d) dot += static_cast<float>(query[d]) * static_cast<float>(key[d]);
              float score = dot * scale;
              if (softcap > 0.0f) score = softcap * std::tanh(score / softcap);
              scores[j - c0] = score;
              block_max = std::max(block_max, score);
            }
            if (block_max == kNegInf) continue;  // nothing visible for this row here
            const int r = i - r0;
            const float m_new = std::max(m[r], block_max);
            const float rescale = std::exp(m[r] - m_new);  // 0 when m was −inf (acc, l are 0 then)
            float* row_acc = acc.data() + static_cast<size_t>(r) * n.value_dim;
            l[r] *= rescale;
            for (int d = 0; d < n.value_dim; ++d) row_acc[d] *= rescale;
            for (int j = c0; j < c1; ++j) {
              if (!filter.Visible(b, i, j)) continue;
              const float p = std::exp(scores[j - c0] - m_new);
              l[r] += p;
              const S* value = values + static_cast<size_t>(j) * n.value_dim;
              for (int d = 0; d < n.value_dim; ++d) row_acc[d] += p * static_cast<float>(value[d]);
            }
            m[r] = m_new;
          }
        }
        for (int i = r0; i < r1; ++i) {
          const int r = i - r0;
          float* dst = out.data() + ((static_cast<size_t>(b) * n.q_heads + h) * n.tq + i) * n.value_dim;
          const float* row_acc = acc.data() + static_cast<size_t>(r) * n.value_dim;
          for (int d = 0; d < n.value_dim; ++d) {
            const float o = l[r] > 0.0f ? row_acc[d] / l[r] : 0.0f;
            dst[d] = static_cast<float>(static_cast<S>(o));  // output rounded to the storage type
          }
        }
      }
    }
  }
}

template <class S>
class TiledSession final : public Session {
 public:
  explicit TiledSession(const SessionArgs& args)
      : args_(args), cache_(args.batch, args.kv_heads, args.head_dim, args.value_dim) {
    if (args.apply_bias) throw std::invalid_argument("tiled: does not apply score biases");
    if (args.apply_positional) rope_.emplace(args.spec, args.current_length);
  }

  // The cache in S: keys rotated as they are stored, values.
  void append(std::span<const float> k, std::span<const float> v, std::span<const int> positions,
              int n) override {
    cache_.Append(k, v, positions, n, [&](S* key, int position) {
      if (rope_) rope_->Apply(key, position, false);
    });
  }

  void attend(std::span<const float> q, std::span<const int> positions, int tq, const MaskArgs& mask,
              std::span<float> out) override {
    const int length = cache_.length();
    const Shapes n{args_.batch, args_.q_heads, args_.kv_heads, tq, length, args_.head_dim, args_.value_dim};
    std::vector<S> query = ToStorage<S>(q);
    if (rope_) rope_->ApplyAll(query, n.batch, n.q_heads, tq, positions, true);
    const KeyFilter filter = MakeKeyFilter(mask, tq, length);
    FlashForward<S>(
        n, query.data(), [&](int b, int h) { return cache_.keys(b, h); },
        [&](int b, int h) { return cache_.values(b, h); }, filter, static_cast<float>(args_.scale),
        static_cast<float>(args_.spec.softcap), out);
  }

 private:
  SessionArgs args_;
  std::optional<FloatRope> rope_;
  KvCache<S> cache_;
};

template <class S>
class TiledAdapter final : public Adapter {
 public:
  std::string name() const override { return TiledAdapterName(kStorageDtype<S>); }
  std::string description() const override {
    return fmt::format("FlashAttention-2-style tiled kernel, {} storage, online softmax, KV cache",
                       Name(kStorageDtype<S>));
  }
  // owns_rope: applies RoPE itself (every layout and scaling); no score bias
  // (its masks are bool, causal flags or a descriptor, which cannot carry one).
  Capabilities capabilities() const override {
    Capabilities caps;
    caps.owns_rope = true;
    caps.owns_bias = false;
    caps.has_rope_stage = true;
    caps.has_session = true;
    caps.dtypes = {kStorageDtype<S>};
    caps.masks = {MaskConvention::kBoolVisible, MaskConvention::kBoolBlocked, MaskConvention::kCausalBottomRight,
                  MaskConvention::kCausalTopLeft, MaskConvention::kDescriptor};
    caps.descriptor_forms = PaddedDescriptorForms();
    caps.masked_rows = MaskedRowPolicy::kZeros;
    caps.encodings = {EncodingKind::kNone, EncodingKind::kRope};
    caps.rope_layouts = {RopeLayout::kHalfSplit, RopeLayout::kInterleaved};
    caps.rope_scalings = {RopeScaling::kNone, RopeScaling::kLinear, RopeScaling::kNtkAware,
                          RopeScaling::kDynamicNtk, RopeScaling::kYarn, RopeScaling::kLlama3,
                          RopeScaling::kNtkMixed, RopeScaling::kYarnPaper};
    caps.gqa = true;
    caps.softcap = true;
    caps.value_dim_differs = true;
    caps.queries_beyond_keys = true;  // Tq > Tk: rows before every key follow masked_rows
    caps.accuracy = {};  // float dot, float online softmax and float P·V accumulator (see the header)
    // Long enough that Decode reaches the key-block edges 63, 64, 65, 127, 128, 129.
    caps.max_tokens = 2 * kBlock + 2;
    return caps;
  }

  void attention(const AttentionArgs& a) override {
    if (a.apply_bias) throw std::invalid_argument("tiled: does not apply score biases");
    const Shapes n{a.batch, a.q_heads, a.kv_heads, a.tq, a.tk, a.head_dim, a.value_dim};
    std::vector<S> q = ToStorage<S>(a.q), k = ToStorage<S>(a.k);
    const std::vector<S> v = ToStorage<S>(a.v);
    if (a.apply_positional) {
      FloatRope rope(a.spec, a.current_length);
      rope.ApplyAll(q, n.batch, n.q_heads, n.tq, a.query_positions, true);
      rope.ApplyAll(k, n.batch, n.kv_heads, n.tk, a.key_positions, false);
    }
    const KeyFilter filter = MakeKeyFilter(a.mask, n.tq, n.tk);
    FlashForward<S>(
        n, q.data(),
        [&](int b, int h) { return k.data() + (static_cast<size_t>(b) * n.kv_heads + h) * n.tk * n.head_dim; },
        [&](int b, int h) { return v.data() + (static_cast<size_t>(b) * n.kv_heads + h) * n.tk * n.value_dim; },
        filter, static_cast<float>(a.scale), static_cast<float>(a.spec.softcap), a.out);
  }

  // Rotation alone (key side: no query-only log-n scale), result in S.
  void rope(const RopeArgs& a) override {
    FloatRope rope(a.spec, a.current_length);
    std::vector<S> x = ToStorage<S>(a.x);
    rope.ApplyAll(x, a.batch, a.heads, a.tokens, a.positions, false);
    for (size_t e = 0; e < x.size(); ++e) a.out[e] = static_cast<float>(x[e]);
  }

  std::unique_ptr<Session> open_session(const SessionArgs& args) override {
    return std::make_unique<TiledSession<S>>(args);
  }
};

}  // namespace
}  // namespace attncheck::adapters

namespace attncheck {

std::string TiledAdapterName(Dtype dtype) {
  switch (dtype) {
    case Dtype::kF32:
      return "tiled-f32";
    case Dtype::kF16:
      return "tiled-f16";
    case Dtype::kBf16:
      return "tiled-bf16";
  }
  return "tiled-?";
}

std::unique_ptr<Adapter> MakeTiledAdapter(Dtype dtype) {
  switch (dtype) {
    case Dtype::kF32:
      return std::make_unique<adapters::TiledAdapter<float>>();
    case Dtype::kF16:
      return std::make_unique<adapters::TiledAdapter<Eigen::half>>();
    case Dtype::kBf16:
      return std::make_unique<adapters::TiledAdapter<Eigen::bfloat16>>();
  }
  throw std::invalid_argument("tiled: unknown dtype");
}

}  // namespace attncheck
