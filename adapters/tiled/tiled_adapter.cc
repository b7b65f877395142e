// The tiled adapters (tiled_adapter.h): FlashAttention-2 forward (Dao 2023,
// Algorithm 1) on the CPU, one query-row block × key block at a time:
//   S_ij = scale · Σ_d q_id k_jd  (float accumulation of storage values), softcap,
//          + the descriptor's ALiBi −slope_h·|d(i) − j| (varlen variants)
//   m_new = max(m, max_j S_ij);  l = l·e^(m − m_new) + Σ_j e^(S_ij − m_new)
//   acc  = acc·e^(m − m_new) + Σ_j e^(S_ij − m_new) v_j
//   out  = round_S(acc / l), or 0 when l = 0 (no visible key: declared policy zeros)
// Blocked keys are skipped, never multiplied by 0, so NaN in a masked K or V
// cannot leak. Under a varlen descriptor the loops run per sequence over the packed
// token axis (cu_seqlens_q/k), and paged K/V is read through the block table, as in
// flash_attn_varlen_func and flash_attn_with_kvcache. RoPE runs in float (angle = float(p)·float(theta_k)) and the
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
// Its first index is the batch row, or the varlen sequence.
struct KeyFilter {
  MaskConvention convention = MaskConvention::kBoolVisible;
  std::span<const uint8_t> boolean;
  DescriptorRule descriptor;
  int tq = 0, tk = 0, offset = 0;
  bool alibi = false;  // the descriptor carries kernel-owned ALiBi

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

KeyFilter MakeKeyFilter(const MaskArgs& mask, int tq, int tk, const DescriptorSlips& slips = {}) {
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
      filter.descriptor = {mask.descriptor, tq, tk, slips};
      filter.alibi = !mask.descriptor->alibi_slopes.empty() || mask.descriptor->alibi_max_bias > 0.0;
      break;
    default:
      throw std::invalid_argument(fmt::format("tiled: mask convention {} not accepted", Name(mask.convention)));
  }
  return filter;
}

struct Shapes {
  int batch, q_heads, kv_heads, tq, tk, head_dim, value_dim;
};

// One sequence of a call: query rows [q0, q0 + nq) of batch row b, keys 0 … nk − 1
// (a padded row: all its Tq rows and Tk slots; varlen: its packed span).
struct Sequence {
  int b, q0, nq, nk;
};

std::vector<Sequence> SequencesOf(const KeyFilter& filter, const Shapes& n) {
  std::vector<Sequence> sequences;
  const VisibilityDescriptor* d = filter.convention == MaskConvention::kDescriptor ? filter.descriptor.d : nullptr;
  if (d == nullptr || !d->varlen()) {
    for (int b = 0; b < n.batch; ++b) sequences.push_back({b, 0, n.tq, n.tk});
    return sequences;
  }
  for (int s = 0; s < d->sequences(); ++s) {
    const DescriptorRule::Row row = filter.descriptor.RowOf(s);
    sequences.push_back({0, d->cu_seqlens_q[s], row.nq, row.nk});
  }
  return sequences;
}

// The forward pass. q [B, Hq, Tq, D] in S; key_row(s, kv, j) → key j of sequence
// s [D] in S; value_row(s, kv, j) → [Dv] in S; out [B, Hq, Tq, Dv] in float (values of S).
// lse, when not empty: [B, Hq, Tq] each row's log-sum-exp m + log l (−inf for a row
// with no visible key), what FlashAttention's forward saves for its backward.
template <class S, class KeyRow, class ValueRow>
void FlashForward(const Shapes& n, const S* q, KeyRow key_row, ValueRow value_row,
                  const KeyFilter& filter, float scale, float softcap, std::span<float> out,
                  std::span<float> lse = {}) {
  const int group = n.q_heads / n.kv_heads;
  std::vector<float> m(kRowBlock), l(kRowBlock), acc(static_cast<size_t>(kRowBlock) * n.value_dim);
  std::vector<float> scores(kBlock);
  const std::vector<Sequence> sequences = SequencesOf(filter, n);
  for (int s = 0; s < static_cast<int>(sequences.size()); ++s) {
    const Sequence& seq = sequences[static_cast<size_t>(s)];
    for (int h = 0; h < n.q_heads; ++h) {
      const int kv = h / group;  // GQA
      const double slope = filter.alibi ? filter.descriptor.Slope(h, n.q_heads) : 0.0;
      const size_t first_row = (static_cast<size_t>(seq.b) * n.q_heads + h) * n.tq + seq.q0;
      const S* queries = q + first_row * n.head_dim;
      for (int r0 = 0; r0 < seq.nq; r0 += kRowBlock) {
        const int r1 = std::min(seq.nq, r0 + kRowBlock);
        std::fill(m.begin(), m.end(), kNegInf);
        std::fill(l.begin(), l.end(), 0.0f);
        std::fill(acc.begin(), acc.end(), 0.0f);
        for (int c0 = 0; c0 < seq.nk; c0 += kBlock) {
          const int c1 = std::min(seq.nk, c0 + kBlock);
          if (!filter.AnyVisible(s, r0, r1, c0, c1)) continue;  // fully masked block: skipped
          for (int i = r0; i < r1; ++i) {
            const S* query = queries + static_cast<size_t>(i) * n.head_dim;
            float block_max = kNegInf;
            for (int j = c0; j < c1; ++j) {
              if (!filter.Visible(s, i, j)) {
                scores[j - c0] = kNegInf;
                continue;
              }
              const S* key = key_row(s, kv, j);
              float dot = 0.0f;
              for (int d = 0; d < n.head_dim; ++d) dot += static_cast<float>(query[d]) * static_cast<float>(key[d]);
              float score = dot * scale;
              if (softcap > 0.0f) score = softcap * std::tanh(score / softcap);
              if (filter.alibi) score += static_cast<float>(filter.descriptor.AlibiBias(slope, s, i, j));
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
              if (!filter.Visible(s, i, j)) continue;
              const float p = std::exp(scores[j - c0] - m_new);
              l[r] += p;
              const S* value = value_row(s, kv, j);
              for (int d = 0; d < n.value_dim; ++d) row_acc[d] += p * static_cast<float>(value[d]);
            }
            m[r] = m_new;
          }
        }
        for (int i = r0; i < r1; ++i) {
          const int r = i - r0;
          if (!lse.empty()) lse[first_row + i] = l[r] > 0.0f ? m[r] + std::log(l[r]) : kNegInf;
          float* dst = out.data() + (first_row + i) * n.value_dim;
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
    if (args_.apply_bias && !filter.alibi) throw std::invalid_argument("tiled: applies ALiBi from a descriptor only");
    FlashForward<S>(
        n, query.data(), [&](int b, int h, int j) { return cache_.keys(b, h) + static_cast<size_t>(j) * n.head_dim; },
        [&](int b, int h, int j) { return cache_.values(b, h) + static_cast<size_t>(j) * n.value_dim; }, filter,
        static_cast<float>(args_.scale), static_cast<float>(args_.spec.softcap), out);
  }

 private:
  SessionArgs args_;
  std::optional<FloatRope> rope_;
  KvCache<S> cache_;
};

// One attention call (AttentionArgs; varlen and paged layouts as
// include/attncheck/adapter.h writes them), the descriptor read with `slips`.
template <class S>
void TiledAttention(const AttentionArgs& a, const DescriptorSlips& slips) {
  const Shapes n{a.batch, a.q_heads, a.kv_heads, a.tq, a.tk, a.head_dim, a.value_dim};
  std::vector<S> q = ToStorage<S>(a.q), k = ToStorage<S>(a.k);
  const std::vector<S> v = ToStorage<S>(a.v);
  const KeyFilter filter = MakeKeyFilter(a.mask, n.tq, n.tk, slips);
  if (a.apply_bias && !filter.alibi) throw std::invalid_argument("tiled: applies ALiBi from a descriptor only");
  const VisibilityDescriptor* d = a.mask.convention == MaskConvention::kDescriptor ? a.mask.descriptor : nullptr;
  const bool varlen = d != nullptr && d->varlen(), paged = d != nullptr && d->paged.page_size > 0;
  // Key j of sequence s: its row in k [B, Hkv, Tk, D] (varlen: batch 1, packed
  // offset cu_seqlens_k[s] + j) or in the pages [num_pages, Hkv, page_size, D].
  auto key_index = [&](int s, int kv, int j) -> size_t {
    if (paged) return filter.descriptor.PagedRow(s, kv, n.kv_heads, j);
    if (varlen) return static_cast<size_t>(kv) * n.tk + d->cu_seqlens_k[s] + j;
    return (static_cast<size_t>(s) * n.kv_heads + kv) * n.tk + j;
  };
  if (a.apply_positional) {
    FloatRope rope(a.spec, a.current_length);
    rope.ApplyAll(q, n.batch, n.q_heads, n.tq, a.query_positions, true);
    if (paged) {  // as the cache write rotated them: every used page slot at its key's position
      const PagedKv& p = d->paged;
      std::vector<int> page_positions(static_cast<size_t>(p.num_pages) * p.page_size, 0);
      for (int s = 0; s < d->sequences(); ++s) {
        const int first = varlen ? d->cu_seqlens_k[s] : s * n.tk;
        const int keys = varlen ? d->cu_seqlens_k[s + 1] - first : d->seqused_k.empty() ? n.tk : d->seqused_k[s];
        for (int j = 0; j < keys; ++j) {
          const int page = p.block_table[static_cast<size_t>(s) * p.max_blocks + j / p.page_size];
          page_positions[static_cast<size_t>(page) * p.page_size + j % p.page_size] = a.key_positions[first + j];
        }
      }
      rope.ApplyAll(k, p.num_pages, n.kv_heads, p.page_size, page_positions, false);
    } else {
      rope.ApplyAll(k, n.batch, n.kv_heads, n.tk, a.key_positions, false);
    }
  }
  FlashForward<S>(
      n, q.data(), [&](int s, int kv, int j) { return k.data() + key_index(s, kv, j) * n.head_dim; },
      [&](int s, int kv, int j) { return v.data() + key_index(s, kv, j) * n.value_dim; }, filter,
      static_cast<float>(a.scale), static_cast<float>(a.spec.softcap), a.out);
}

// The backward (FlashAttention-2, Dao 2023, Algorithm 2) of one padded call: the
// forward's saved O (in S) and each row's log-sum-exp, handed over (BackwardArgs::saved_out,
// saved_lse) or, when not, from its own forward; δ_i = dO_i·O_i; then per key
// block (Bc = 64) and query-row block (Br = 16), blocks with no visible pair
// skipped, P_ij = exp(S_ij − lse_i) recomputed, dV_j += P_ij dO_i, dP_ij = dO_i·v_j,
// dS_ij = P_ij (dP_ij − δ_i) (· (1 − tanh²) with softcap), dQ_i += scale·dS_ij k_j,
// dK_j += scale·dS_ij q_i, over visible pairs only; float accumulators, the
// gradients rounded to S at the end. dK and dV of a kv head sum its query heads.
template <class S>
void TiledBackward(const BackwardArgs& args) {
  const AttentionArgs& a = args.forward;
  if (a.apply_positional || a.apply_bias) throw std::invalid_argument("tiled backward: q, k encoded, no score bias");
  const Shapes n{a.batch, a.q_heads, a.kv_heads, a.tq, a.tk, a.head_dim, a.value_dim};
  const std::vector<S> q = ToStorage<S>(a.q), k = ToStorage<S>(a.k), v = ToStorage<S>(a.v);
  const std::vector<S> dout = ToStorage<S>(args.dout);
  const KeyFilter filter = MakeKeyFilter(a.mask, n.tq, n.tk);
  if (filter.alibi || (filter.descriptor.d != nullptr && (filter.descriptor.d->varlen() ||
                                                          filter.descriptor.d->paged.page_size > 0))) {
    throw std::invalid_argument("tiled backward: the padded layout without ALiBi only");
  }
  const auto key_row = [&](int b, int kv, int j) {
    return k.data() + ((static_cast<size_t>(b) * n.kv_heads + kv) * n.tk + j) * n.head_dim;
  };
  const auto value_row = [&](int b, int kv, int j) {
    return v.data() + ((static_cast<size_t>(b) * n.kv_heads + kv) * n.tk + j) * n.value_dim;
  };
  const float scale = static_cast<float>(a.scale), softcap = static_cast<float>(a.spec.softcap);
  // O and the log-sum-exp: the saved ones handed over (Capabilities::backward_saved, as
  // FlashAttention's backward reads out and softmax_lse), else this kernel's own forward.
  std::vector<float> own_out, own_lse;
  std::span<const float> out = args.saved_out, lse = args.saved_lse;
  if (out.empty() || lse.empty()) {
    own_out.resize(static_cast<size_t>(n.batch) * n.q_heads * n.tq * n.value_dim);
    own_lse.resize(static_cast<size_t>(n.batch) * n.q_heads * n.tq);
    FlashForward<S>(n, q.data(), key_row, value_row, filter, scale, softcap, own_out, own_lse);
    out = own_out;
    lse = own_lse;
  }
  if (!args.lse.empty()) std::copy(lse.begin(), lse.end(), args.lse.begin());  // backward_lse: the lse it used
  std::vector<float> delta(lse.size(), 0.0f);
  for (size_t row = 0; row < delta.size(); ++row)
    for (int d = 0; d < n.value_dim; ++d)
      delta[row] += static_cast<float>(dout[row * n.value_dim + d]) * out[row * n.value_dim + d];
  std::vector<float> dq(args.dq.size(), 0.0f), dk(args.dk.size(), 0.0f), dv(args.dv.size(), 0.0f);
  const int group = n.q_heads / n.kv_heads;
  for (int b = 0; b < n.batch; ++b)
    for (int h = 0; h < n.q_heads; ++h) {
      const int kv = h / group;
      const size_t first_row = (static_cast<size_t>(b) * n.q_heads + h) * n.tq;
      for (int c0 = 0; c0 < n.tk; c0 += kBlock) {
        const int c1 = std::min(n.tk, c0 + kBlock);
        for (int r0 = 0; r0 < n.tq; r0 += kRowBlock) {
          const int r1 = std::min(n.tq, r0 + kRowBlock);
          if (!filter.AnyVisible(b, r0, r1, c0, c1)) continue;  // a block the visibility excludes
          for (int i = r0; i < r1; ++i) {
            const size_t row = first_row + i;
            const S* query = q.data() + row * n.head_dim;
            const S* grad_out = dout.data() + row * n.value_dim;
            for (int j = c0; j < c1; ++j) {
              if (!filter.Visible(b, i, j)) continue;
              const S* key = key_row(b, kv, j);
              const S* value = value_row(b, kv, j);
              float dot = 0.0f;
              for (int d = 0; d < n.head_dim; ++d) dot += static_cast<float>(query[d]) * static_cast<float>(key[d]);
              float score = dot * scale, derivative = 1.0f;
              if (softcap > 0.0f) {
                const float t = std::tanh(score / softcap);
                score = softcap * t;
                derivative = 1.0f - t * t;
              }
              const float p = std::exp(score - lse[row]);
              float dp = 0.0f;
              for (int d = 0; d < n.value_dim; ++d) dp += static_cast<float>(grad_out[d]) * static_cast<float>(value[d]);
              const float ds = p * (dp - delta[row]) * derivative;
              const size_t key_at = (static_cast<size_t>(b) * n.kv_heads + kv) * n.tk + j;
              for (int d = 0; d < n.value_dim; ++d) dv[key_at * n.value_dim + d] += p * static_cast<float>(grad_out[d]);
              for (int d = 0; d < n.head_dim; ++d) {
                dq[row * n.head_dim + d] += scale * ds * static_cast<float>(key[d]);
                dk[key_at * n.head_dim + d] += scale * ds * static_cast<float>(query[d]);
              }
            }
          }
        }
      }
    }
  const auto store = [](const std::vector<float>& from, std::span<float> to) {
    for (size_t e = 0; e < from.size(); ++e) to[e] = static_cast<float>(static_cast<S>(from[e]));
  };
  store(dq, args.dq);
  store(dk, args.dk);
  store(dv, args.dv);
}

// A tiled kernel: the padded one (every mask convention, the padded batch's
// descriptor), or a FlashAttention-varlen one taking only descriptors.
struct Variant {
  std::string name;
  std::string layout;  // for the description
  bool descriptor_only = false;
  DescriptorForms forms;
};

template <class S>
class TiledAdapter final : public Adapter {
 public:
  explicit TiledAdapter(Variant variant) : variant_(std::move(variant)) {}
  std::string name() const override { return variant_.name; }
  std::string description() const override {
    return fmt::format("FlashAttention-2-style tiled kernel, {} storage, online softmax, KV cache{}",
                       Name(kStorageDtype<S>), variant_.layout);
  }
  // owns_rope: applies RoPE itself (every layout and scaling). The padded kernel
  // takes no score bias (bool masks and causal flags cannot carry one); the varlen
  // variants own ALiBi, which their descriptor carries as slopes.
  Capabilities capabilities() const override {
    Capabilities caps;
    caps.owns_rope = true;
    caps.owns_bias = variant_.descriptor_only;
    caps.has_rope_stage = true;
    caps.has_session = true;
    caps.session_rope_as_call = true;  // TiledSession rotates each key as stored by the call's FloatRope
    caps.has_backward = !variant_.descriptor_only;  // the padded layout's backward (TiledBackward)
    caps.backward_lse = caps.has_backward;           // the log-sum-exp its backward reads
    caps.backward_saved = caps.has_backward;         // reads the saved O and log-sum-exp (FlashAttention-2)
    caps.dtypes = {kStorageDtype<S>};
    caps.masks = {MaskConvention::kBoolVisible, MaskConvention::kBoolBlocked, MaskConvention::kCausalBottomRight,
                  MaskConvention::kCausalTopLeft, MaskConvention::kDescriptor};
    if (variant_.descriptor_only) caps.masks = {MaskConvention::kDescriptor};
    caps.descriptor_forms = variant_.forms;
    caps.masked_rows = MaskedRowPolicy::kZeros;
    caps.encodings = {EncodingKind::kNone, EncodingKind::kRope};
    if (variant_.descriptor_only) caps.encodings.push_back(EncodingKind::kAlibi);
    caps.rope_layouts = {RopeLayout::kHalfSplit, RopeLayout::kInterleaved};
    caps.rope_scalings = {RopeScaling::kNone, RopeScaling::kLinear, RopeScaling::kNtkAware,
                          RopeScaling::kDynamicNtk, RopeScaling::kYarn, RopeScaling::kLlama3,
                          RopeScaling::kNtkMixed, RopeScaling::kYarnPaper};
    caps.gqa = true;
    caps.softcap = true;
    caps.value_dim_differs = true;
    caps.queries_beyond_keys = true;  // Tq > Tk: rows before every key follow masked_rows
    caps.many_heads = 40;             // now and then 6, 12, 20, 24 or 40 heads (GQA groups, ALiBi slopes)
    caps.accuracy = {};  // float dot, float online softmax and float P·V accumulator (see the header)
    // Long enough that Decode reaches the key-block edges 63, 64, 65, 127, 128, 129.
    caps.max_tokens = 2 * kBlock + 2;
    caps.tile_sizes = {kRowBlock, kBlock};  // a share of cases at Tq, Tk = 16m ± 1, 64m ± 1
    return caps;
  }

  void attention(const AttentionArgs& a) override { TiledAttention<S>(a, {}); }
  void backward(const BackwardArgs& args) override { TiledBackward<S>(args); }

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

 private:
  Variant variant_;
};

template <class S>
std::unique_ptr<Adapter> Make(Variant variant) {
  return std::make_unique<TiledAdapter<S>>(std::move(variant));
}

std::unique_ptr<Adapter> MakeTiled(Dtype dtype, Variant variant) {
  switch (dtype) {
    case Dtype::kF32:
      return Make<float>(std::move(variant));
    case Dtype::kF16:
      return Make<Eigen::half>(std::move(variant));
    case Dtype::kBf16:
      return Make<Eigen::bfloat16>(std::move(variant));
  }
  throw std::invalid_argument("tiled: unknown dtype");
}

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
  return adapters::MakeTiled(dtype, {TiledAdapterName(dtype), "", false, adapters::PaddedDescriptorForms()});
}

std::string TiledVarlenAdapterName(Dtype dtype, int page_size) {
  return fmt::format("tiled-{}-{}", page_size > 0 ? "paged" : "varlen", Name(dtype));
}

std::unique_ptr<Adapter> MakeTiledVarlenAdapter(Dtype dtype, int page_size) {
  DescriptorForms forms = adapters::VarlenDescriptorForms(page_size);
  // The block table is read for any page size: also one key per page and an odd size
  // that divides no tile, each case at one of them (a fourth size would put the 4 × 9
  // page size × encoding pairs, which exclude each other, out of reach of 2 % each).
  if (page_size > 0) forms.more_page_sizes = {1, 7};
  const std::string layout =
      page_size > 0 ? fmt::format(", varlen + paged K/V (page sizes {}, 1, 7)", page_size)
                    : std::string(", varlen (cu_seqlens)");
  return adapters::MakeTiled(dtype, {TiledVarlenAdapterName(dtype, page_size), layout, true, forms});
}

void TiledAttention(Dtype dtype, const AttentionArgs& args, const adapters::DescriptorSlips& slips) {
  switch (dtype) {
    case Dtype::kF32:
      return adapters::TiledAttention<float>(args, slips);
    case Dtype::kF16:
      return adapters::TiledAttention<Eigen::half>(args, slips);
    case Dtype::kBf16:
      return adapters::TiledAttention<Eigen::bfloat16>(args, slips);
  }
  throw std::invalid_argument("tiled: unknown dtype");
}

}  // namespace attncheck
