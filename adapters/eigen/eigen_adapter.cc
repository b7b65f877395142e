// The `eigen` adapter (eigen_adapter.h). Everything is float32; Eigen::Map views
// the row-major buffers without copies:
//   S = scale · Q Kᵀ                         [Tq, Tk]
//   S = c · tanh(S / c)                       (softcap c > 0)
//   S = blocked ? −inf : S + M                fused additive mask (bool → 0 / −inf)
//   P_i = exp(S_i − max S_i) / Σ exp(...)     a row whose max is −inf → out 0
//   O_i = Σ_{j: P_ij > 0} P_ij V_j            blocked keys are skipped, not multiplied by 0,
//                                             so NaN in a masked value cannot leak
// Where the CPU has AVX2 and FMA, the head runs as avx2_head.h computes it (the
// same steps, 8 lanes, FMA); this Eigen code is the portable path (ScopedEigenPath).
// RoPE is applied in float as real kernels do: angle = float(p)·float(theta_k),
// with theta and YaRN's mscale from reference::Frequencies.
#include "adapters/eigen/eigen_adapter.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>
#include <vector>

#include <Eigen/Core>

#include "adapters/eigen/avx2_head.h"
#include "adapters/float_rope.h"
#include "adapters/kv_cache.h"
#include "reference/mask.h"
#include "reference/rope_scaling.h"

namespace attncheck::adapters {
namespace {

using RowMatrixXf = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MapConst = Eigen::Map<const RowMatrixXf>;
using MapMut = Eigen::Map<RowMatrixXf>;

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// The mask as additive float [B, Tq, Tk] into `additive` (its storage reused):
// bool conventions become 0 / −inf.
void AdditiveMask(const MaskArgs& mask, size_t size, std::vector<float>& additive, const DescriptorSlips& slips = {}) {
  additive.resize(size);
  switch (mask.convention) {
    case MaskConvention::kBoolVisible:
    case MaskConvention::kBoolBlocked: {
      const bool blocked_value = mask.convention == MaskConvention::kBoolBlocked;
      for (size_t e = 0; e < size; ++e) additive[e] = (mask.boolean[e] != 0) == blocked_value ? kNegInf : 0.0f;
      return;
    }
    case MaskConvention::kAdditiveNegInf:
    case MaskConvention::kAdditiveLowest:
    case MaskConvention::kAdditiveMinus1e4:
    case MaskConvention::kAdditiveMinus1e9: {
      // The convention's fill marks a blocked key: it becomes −inf, so a blocked
      // key is excluded outright (NaN or huge values in it cannot leak); any
      // other value (0, or a folded score bias) is added to the score.
      const float fill = static_cast<float>(reference::AdditiveFill(mask.convention, Dtype::kF32));
      additive.resize(mask.additive.size());
      using Packet = Eigen::internal::packet_traits<float>::type;
      namespace ei = Eigen::internal;
      constexpr size_t kLanes = ei::packet_traits<float>::size;
      const Packet fill_packet = ei::pset1<Packet>(fill), neg_inf = ei::pset1<Packet>(kNegInf);
      size_t e = 0;
      for (; e + kLanes <= additive.size(); e += kLanes) {  // a packet at a time, then the rest
        const Packet m = ei::ploadu<Packet>(mask.additive.data() + e);
        ei::pstoreu(additive.data() + e, ei::pselect(ei::pcmp_eq(m, fill_packet), neg_inf, m));
      }
      for (; e < additive.size(); ++e) additive[e] = mask.additive[e] == fill ? kNegInf : mask.additive[e];
      return;
    }
    case MaskConvention::kDescriptor: {
      if (mask.descriptor == nullptr) throw std::invalid_argument("eigen: descriptor convention without a descriptor");
      const VisibilityDescriptor& d = *mask.descriptor;
      if (d.varlen() || d.paged.page_size > 0) throw std::invalid_argument("eigen: varlen and paged descriptors are not taken");
      const DescriptorRule rule{&d, d.tq, d.tk, slips};
      size_t e = 0;
      for (int b = 0; b < d.batch; ++b)
        for (int i = 0; i < d.tq; ++i)
          for (int j = 0; j < d.tk; ++j) additive[e++] = rule.Visible(b, i, j) ? 0.0f : kNegInf;
      return;
    }
    default:
      throw std::invalid_argument("eigen: causal-flag mask conventions are not accepted");
  }
}

std::vector<float> AdditiveMask(const MaskArgs& mask, size_t size, const DescriptorSlips& slips) {
  std::vector<float> additive;
  AdditiveMask(mask, size, additive, slips);
  return additive;
}

// A call's own copies (the additive mask, rotated q and k), kept per thread and
// reused from call to call: each is overwritten in full before use.
struct CallScratch {
  std::vector<float> mask, query, key;
};

CallScratch& CallBuffers() {
  thread_local CallScratch scratch;
  return scratch;
}

// Working storage of AttendHead, kept per thread and reused from call to call
// (Eigen types: the same alignment, so Eigen's reductions over them keep their
// order), without an allocation per row.
struct HeadScratch {
  RowMatrixXf scores;                // [Tq, Tk]: scores, then the masked scores
  Eigen::RowVectorXf weights;        // [Tk]
};

HeadScratch& Scratch() {
  thread_local HeadScratch scratch;
  return scratch;
}

// weights[j] = exp(row[j] − row_max), or exactly 0 for a blocked key (row[j] = −inf).
// Evaluated as Eigen evaluates `shifted.exp()` into an aligned array: packets over
// the first ⌊Tk/P⌋·P elements, the scalar exp after them (lanes are independent,
// so a packet's values do not depend on its neighbours), except that a packet
// whose keys are all blocked is not evaluated at all. Blocked weights are set to 0
// because Eigen's vectorized exp clamps its argument at about −88.4: exp(−inf)
// would come out as 2.9e−39.
void RowWeights(const float* row, float row_max, Eigen::Index tk, float* weights) {
  using Packet = Eigen::internal::packet_traits<float>::type;
  constexpr int kLanes = Eigen::internal::packet_traits<float>::size;
  const Eigen::internal::scalar_exp_op<float> exp_op;
  alignas(64) float shifted[kLanes], exponentials[kLanes];
  Eigen::Index j = 0;
  for (; j + kLanes <= tk; j += kLanes) {
    bool any_visible = false;
    for (int l = 0; l < kLanes; ++l) {
      shifted[l] = row[j + l] - row_max;
      any_visible |= shifted[l] != kNegInf;
    }
    if (!any_visible) {
      std::fill_n(weights + j, kLanes, 0.0f);
      continue;
    }
    Eigen::internal::pstore(exponentials, exp_op.packetOp(Eigen::internal::pload<Packet>(shifted)));
    for (int l = 0; l < kLanes; ++l) weights[j + l] = shifted[l] == kNegInf ? 0.0f : exponentials[l];
  }
  for (; j < tk; ++j) {
    const float x = row[j] - row_max;
    weights[j] = x == kNegInf ? 0.0f : exp_op(x);
  }
}

// out[d] = (Σ_j weights[j]·v[j, d]) / sum over the keys with a positive weight, each
// out[d] accumulated from +0 in key order (one multiply, then one add per key, as
// `acc += w_j · v_j` evaluates it), a block of output dims at a time so the
// partial sums stay in registers across the keys.
void WeightedValues(const float* weights, Eigen::Index tk, const Eigen::Ref<const RowMatrixXf>& v, float sum,
                    float* out) {
  using Packet = Eigen::internal::packet_traits<float>::type;
  namespace ei = Eigen::internal;
  constexpr int kLanes = ei::packet_traits<float>::size;
  constexpr int kBlock = 4 * kLanes;
  const Eigen::Index dv = v.cols(), stride = v.outerStride();
  const float* values = v.data();
  Eigen::Index d0 = 0;
  for (; d0 + kBlock <= dv; d0 += kBlock) {
    Packet a0 = ei::pset1<Packet>(0.0f), a1 = a0, a2 = a0, a3 = a0;
    for (Eigen::Index j = 0; j < tk; ++j) {
      if (!(weights[j] > 0.0f)) continue;
      const Packet wj = ei::pset1<Packet>(weights[j]);
      const float* row = values + j * stride + d0;
      a0 = ei::padd(a0, ei::pmul(wj, ei::ploadu<Packet>(row)));
      a1 = ei::padd(a1, ei::pmul(wj, ei::ploadu<Packet>(row + kLanes)));
      a2 = ei::padd(a2, ei::pmul(wj, ei::ploadu<Packet>(row + 2 * kLanes)));
      a3 = ei::padd(a3, ei::pmul(wj, ei::ploadu<Packet>(row + 3 * kLanes)));
    }
    const Packet total = ei::pset1<Packet>(sum);
    ei::pstoreu(out + d0, ei::pdiv(a0, total));
    ei::pstoreu(out + d0 + kLanes, ei::pdiv(a1, total));
    ei::pstoreu(out + d0 + 2 * kLanes, ei::pdiv(a2, total));
    ei::pstoreu(out + d0 + 3 * kLanes, ei::pdiv(a3, total));
  }
  for (; d0 + kLanes <= dv; d0 += kLanes) {
    Packet a = ei::pset1<Packet>(0.0f);
    for (Eigen::Index j = 0; j < tk; ++j)
      if (weights[j] > 0.0f) a = ei::padd(a, ei::pmul(ei::pset1<Packet>(weights[j]), ei::ploadu<Packet>(values + j * stride + d0)));
    ei::pstoreu(out + d0, ei::pdiv(a, ei::pset1<Packet>(sum)));
  }
  // The last < kLanes dims: a packet whose extra lanes read the next key's values
  // (or zeros past the head's last value) and are never stored.
  const Eigen::Index rest = dv - d0;
  if (rest == 0 || tk == 0) return;
  const Eigen::Index extent = (tk - 1) * stride + dv;  // the head's values end here
  alignas(64) float padded[kLanes] = {}, sums[kLanes];
  Packet a = ei::pset1<Packet>(0.0f);
  for (Eigen::Index j = 0; j < tk; ++j) {
    if (!(weights[j] > 0.0f)) continue;
    const Eigen::Index start = j * stride + d0;
    Packet x;
    if (start + kLanes <= extent) {
      x = ei::ploadu<Packet>(values + start);
    } else {
      std::copy_n(values + start, rest, padded);
      x = ei::pload<Packet>(padded);
    }
    a = ei::padd(a, ei::pmul(ei::pset1<Packet>(weights[j]), x));
  }
  ei::pstore(sums, ei::pdiv(a, ei::pset1<Packet>(sum)));
  std::copy_n(sums, rest, out + d0);
}

// scores = blocked (mask −inf) ? −inf : scores + mask, element by element (a
// packet at a time, then the row's last elements).
void FuseMask(const Eigen::Ref<const RowMatrixXf>& mask, RowMatrixXf& scores) {
  using Packet = Eigen::internal::packet_traits<float>::type;
  namespace ei = Eigen::internal;
  constexpr int kLanes = ei::packet_traits<float>::size;
  const Packet neg_inf = ei::pset1<Packet>(kNegInf);
  const Eigen::Index tk = scores.cols();
  for (Eigen::Index i = 0; i < scores.rows(); ++i) {
    float* row = scores.data() + i * tk;
    const float* mask_row = mask.data() + i * mask.outerStride();
    Eigen::Index j = 0;
    for (; j + kLanes <= tk; j += kLanes) {
      const Packet m = ei::ploadu<Packet>(mask_row + j);
      ei::pstoreu(row + j, ei::pselect(ei::pcmp_eq(m, neg_inf), neg_inf, ei::padd(ei::ploadu<Packet>(row + j), m)));
    }
    for (; j < tk; ++j) row[j] = mask_row[j] == kNegInf ? kNegInf : row[j] + mask_row[j];
  }
}

// The path AttendHead takes: AVX2+FMA where the CPU has it, unless a test chose.
std::atomic<EigenPath>& PathSlot() {
  static std::atomic<EigenPath> path{HasAvx2Fma() ? EigenPath::kAvx2 : EigenPath::kPortable};
  return path;
}

// One (batch, head): q [Tq, D], k [Tk, D], v [Tk, Dv], mask [Tq, Tk] additive → out [Tq, Dv].
void AttendHead(const Eigen::Ref<const RowMatrixXf>& q, const Eigen::Ref<const RowMatrixXf>& k,
                const Eigen::Ref<const RowMatrixXf>& v, const Eigen::Ref<const RowMatrixXf>& mask, float scale,
                float softcap, Eigen::Ref<RowMatrixXf> out) {
  if (PathSlot().load(std::memory_order_relaxed) == EigenPath::kAvx2) {
    Avx2AttendHead({q.data(), k.data(), v.data(), mask.data(), out.data(), q.outerStride(), k.outerStride(),
                    v.outerStride(), mask.outerStride(), out.outerStride(), static_cast<int>(q.rows()),
                    static_cast<int>(k.rows()), static_cast<int>(q.cols()), static_cast<int>(v.cols()), scale, softcap});
    return;
  }
  HeadScratch& w = Scratch();
  RowMatrixXf& scores = w.scores;
  scores.noalias() = q * k.transpose();  // [Tq, Tk]
  scores *= scale;
  const Eigen::Index tq = scores.rows(), tk = scores.cols();
  if (softcap > 0.0f) {
    // std::tanh per element: Eigen's vectorized tanh is a rational approximation
    // whose few-ulp error, multiplied by the cap, exceeds float rounding. Scores
    // of blocked keys are skipped: the fused mask below replaces them by −inf.
    for (Eigen::Index i = 0; i < tq; ++i)
      for (Eigen::Index j = 0; j < tk; ++j)
        if (mask(i, j) != kNegInf) scores(i, j) = softcap * std::tanh(scores(i, j) / softcap);
  }
  // Fused mask, in place: −inf entries are blocked outright (so a NaN score cannot survive).
  FuseMask(mask, scores);
  w.weights.resize(tk);
  for (Eigen::Index i = 0; i < tq; ++i) {
    const float row_max = tk == 0 ? kNegInf : scores.row(i).maxCoeff();
    if (!(row_max > kNegInf)) {  // no visible key (or no key at all): declared policy zeros
      out.row(i).setZero();
      continue;
    }
    RowWeights(&scores(i, 0), row_max, tk, w.weights.data());
    const float sum = w.weights.sum();
    WeightedValues(w.weights.data(), tk, v, sum, out.data() + i * out.outerStride());
  }
}

// The FloatRope of a spec's RoPE, dims and current length, kept per thread
// while they stay the same: its frequencies and per-position cos/sin are a
// function of those alone (the tables a kernel keeps), so a call rotates with
// the very values a fresh one would compute. Rebuilt every kRopeUses calls, so
// its table of positions stays small.
constexpr int kRopeUses = 64;

const FloatRope& RopeFor(const KernelSpec& c, int current_length) {
  struct Kept {
    RopeSpec spec;
    int rotary_dim = 0, head_dim = 0, current_length = 0, uses = 0;
    std::unique_ptr<FloatRope> rope;
  };
  thread_local Kept kept;
  if (!kept.rope || kept.uses >= kRopeUses || c.encoding.kind != EncodingKind::kRope || !(kept.spec == c.encoding.rope) || kept.rotary_dim != c.rotary_dim() ||
      kept.head_dim != c.head_dim || kept.current_length != current_length) {
    kept.rope.reset();
    kept.rope = std::make_unique<FloatRope>(c, current_length);
    kept.spec = c.encoding.rope;
    kept.rotary_dim = c.rotary_dim();
    kept.head_dim = c.head_dim;
    kept.current_length = current_length;
    kept.uses = 0;
  }
  ++kept.uses;
  return *kept.rope;
}

// Attention of every (b, h) given float buffers (q, k already encoded).
// q [B, Hq, Tq, D], k [B, Hkv, Tk, D] as per-(b, kv head) blocks via `key_block`.
struct Shapes {
  int batch, q_heads, kv_heads, tq, tk, head_dim, value_dim;
};

template <class KeyBlock, class ValueBlock>
void AttendAll(const Shapes& n, const float* q, KeyBlock key_block, ValueBlock value_block,
               const std::vector<float>& mask, float scale, float softcap, std::span<float> out) {
  const int group = n.q_heads / n.kv_heads;
  for (int b = 0; b < n.batch; ++b) {
    const MapConst mask_b(mask.data() + static_cast<size_t>(b) * n.tq * n.tk, n.tq, n.tk);
    for (int h = 0; h < n.q_heads; ++h) {
      const int kv = h / group;  // GQA
      const MapConst q_bh(q + (static_cast<size_t>(b) * n.q_heads + h) * n.tq * n.head_dim, n.tq, n.head_dim);
      const MapConst k_bh(key_block(b, kv), n.tk, n.head_dim);
      const MapConst v_bh(value_block(b, kv), n.tk, n.value_dim);
      MapMut out_bh(out.data() + (static_cast<size_t>(b) * n.q_heads + h) * n.tq * n.value_dim, n.tq,
                    n.value_dim);
      AttendHead(q_bh, k_bh, v_bh, mask_b, scale, softcap, out_bh);
    }
  }
}

class EigenSession final : public Session {
 public:
  explicit EigenSession(const SessionArgs& args)
      : args_(args), cache_(args.batch, args.kv_heads, args.head_dim, args.value_dim) {
    if (args.apply_bias) throw std::invalid_argument("eigen: does not apply score biases itself");
    if (args.apply_positional) {
      rope_.emplace(args.spec, args.current_length);
    }
  }

  // Caches the new keys (rotated as they are stored) and values.
  void append(std::span<const float> k, std::span<const float> v, std::span<const int> positions,
              int n) override {
    cache_.Append(k, v, positions, n, [&](float* key, int position) {
      if (rope_) rope_->Apply(key, position, false);
    });
  }

  void attend(std::span<const float> q, std::span<const int> positions, int tq, const MaskArgs& mask,
              std::span<float> out) override {
    const int length = cache_.length();
    const Shapes n{args_.batch, args_.q_heads, args_.kv_heads, tq, length, args_.head_dim, args_.value_dim};
    CallScratch& scratch = CallBuffers();
    std::vector<float>& query = scratch.query;  // a rotated copy; without RoPE q is read in place
    if (rope_) {
      query.assign(q.begin(), q.end());
      rope_->ApplyAll(query, n.batch, n.q_heads, tq, positions, true);
    }
    const std::vector<float>& additive = scratch.mask;
    AdditiveMask(mask, static_cast<size_t>(n.batch) * tq * length, scratch.mask);
    AttendAll(
        n, rope_ ? query.data() : q.data(), [&](int b, int h) { return cache_.keys(b, h); },
        [&](int b, int h) { return cache_.values(b, h); }, additive, static_cast<float>(args_.scale),
        static_cast<float>(args_.spec.softcap), out);
  }

 private:
  SessionArgs args_;
  std::optional<FloatRope> rope_;
  KvCache<float> cache_;
};

class EigenAdapter final : public Adapter {
 public:
  std::string name() const override { return "eigen"; }
  std::string description() const override {
    return "float32 Eigen kernel: Q·Kᵀ, fused additive mask, row softmax, KV cache";
  }
  // owns_rope: applies the q/k-side encodings it lists itself (none, RoPE with
  // every layout and scaling). The score-bias kinds it lists (ALiBi, T5, KERPLE,
  // Sandwich) are not owned: the harness folds them into the additive mask, so
  // they run under the additive conventions only.
  Capabilities capabilities() const override {
    Capabilities caps;
    caps.owns_rope = true;
    caps.owns_bias = false;
    caps.has_rope_stage = true;
    caps.has_session = true;
    caps.session_rope_as_call = true;  // EigenSession rotates with the FloatRope a call builds
    caps.has_backward = true;
    caps.backward_lse = true;
    caps.dtypes = {Dtype::kF32};
    caps.masks = {MaskConvention::kAdditiveNegInf,   MaskConvention::kAdditiveLowest,
                  MaskConvention::kAdditiveMinus1e4, MaskConvention::kAdditiveMinus1e9,
                  MaskConvention::kBoolVisible,      MaskConvention::kBoolBlocked,
                  MaskConvention::kDescriptor};
    caps.descriptor_forms = PaddedDescriptorForms();
    caps.masked_rows = MaskedRowPolicy::kZeros;
    caps.encodings = {EncodingKind::kNone, EncodingKind::kRope,   EncodingKind::kAlibi,
                      EncodingKind::kT5,   EncodingKind::kKerple, EncodingKind::kSandwich};
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

  void attention(const AttentionArgs& a) override {
    if (a.apply_bias) throw std::invalid_argument("eigen: does not apply score biases itself");
    const Shapes n{a.batch, a.q_heads, a.kv_heads, a.tq, a.tk, a.head_dim, a.value_dim};
    // Rotated copies of q and k; without RoPE they are read in place.
    CallScratch& scratch = CallBuffers();
    std::vector<float>& q_rotated = scratch.query;
    std::vector<float>& k_rotated = scratch.key;
    const float* q = a.q.data();
    const float* k = a.k.data();
    if (a.apply_positional) {
      q_rotated.assign(a.q.begin(), a.q.end());
      k_rotated.assign(a.k.begin(), a.k.end());
      const FloatRope& rope = RopeFor(a.spec, a.current_length);
      rope.ApplyAll(q_rotated, n.batch, n.q_heads, n.tq, a.query_positions, true);
      rope.ApplyAll(k_rotated, n.batch, n.kv_heads, n.tk, a.key_positions, false);
      q = q_rotated.data();
      k = k_rotated.data();
    }
    const std::vector<float>& mask = scratch.mask;
    AdditiveMask(a.mask, static_cast<size_t>(n.batch) * n.tq * n.tk, scratch.mask);
    AttendAll(
        n, q,
        [&](int b, int h) { return k + (static_cast<size_t>(b) * n.kv_heads + h) * n.tk * n.head_dim; },
        [&](int b, int h) { return a.v.data() + (static_cast<size_t>(b) * n.kv_heads + h) * n.tk * n.value_dim; },
        mask, static_cast<float>(a.scale), static_cast<float>(a.spec.softcap), a.out);
  }

  // Rotation alone (key side: no query-only log-n scale).
  void rope(const RopeArgs& a) override {
    FloatRope rope(a.spec, a.current_length);
    std::vector<float> x(a.x.begin(), a.x.end());
    rope.ApplyAll(x, a.batch, a.heads, a.tokens, a.positions, false);
    std::copy(x.begin(), x.end(), a.out.begin());
  }

  std::unique_ptr<Session> open_session(const SessionArgs& args) override {
    return std::make_unique<EigenSession>(args);
  }

  void backward(const BackwardArgs& args) override { EigenBackward(args); }
};

}  // namespace
}  // namespace attncheck::adapters

namespace attncheck {

std::unique_ptr<Adapter> MakeEigenAdapter() { return std::make_unique<adapters::EigenAdapter>(); }

std::vector<float> EigenAdditiveMask(const MaskArgs& mask, size_t size, const adapters::DescriptorSlips& slips) {
  return adapters::AdditiveMask(mask, size, slips);
}

void EigenAttendHead(const float* q, const float* k, const float* v, const float* mask, int tq, int tk,
                     int head_dim, int value_dim, float scale, float softcap, float* out) {
  using adapters::MapConst;
  using adapters::MapMut;
  adapters::AttendHead(MapConst(q, tq, head_dim), MapConst(k, tk, head_dim), MapConst(v, tk, value_dim),
                       MapConst(mask, tq, tk), scale, softcap, MapMut(out, tq, value_dim));
}

EigenPath ActiveEigenPath() { return adapters::PathSlot().load(std::memory_order_relaxed); }

bool EigenPathAvailable(EigenPath path) { return path == EigenPath::kPortable || adapters::HasAvx2Fma(); }

ScopedEigenPath::ScopedEigenPath(EigenPath path) : previous_(ActiveEigenPath()) {
  if (!EigenPathAvailable(path)) throw std::invalid_argument("eigen: this CPU has no AVX2+FMA path");
  adapters::PathSlot().store(path, std::memory_order_relaxed);
}

ScopedEigenPath::~ScopedEigenPath() { adapters::PathSlot().store(previous_, std::memory_order_relaxed); }

void EigenRotate(const KernelSpec& c, int current_length, std::span<float> x, int batch, int heads, int tokens,
                 std::span<const int> positions, bool query) {
  adapters::FloatRope(c, current_length).ApplyAll(x, batch, heads, tokens, positions, query);
}

}  // namespace attncheck
