// The ggml adapters (ggml_adapter.h, README.md). Every call builds one ggml
// context (no_alloc = false), one graph, and computes it on the CPU with one
// thread (ggml_graph_plan + ggml_graph_compute; cplan.use_ref for *-ref; *-4t: four). `ggml`'s
// backward is ggml's own autodiff of the same graph (ggml_build_backward_expand).
//
// Layouts: the harness's row-major [B, H, T, D] is ggml's ne = [D, T, H, B].
//   RoPE:   ggml_rope_ext wants [D, H, N] with one I32 position per ne2 token, so
//           x is copied to [B·T, H, D] on the host, rotated with positions [B·T],
//           and copied back (mode 0 = interleaved pairs, GGML_ROPE_TYPE_NEOX = half-split).
//   ggml:   S = mul_mat(K, Q) [Tk, Tq, Hq, B] (kv head = h / (Hq/Hkv) by mul_mat's
//           broadcast), P = soft_max_ext(S, mask F32 [Tk, Tq, 1, B], scale, 0),
//           O = mul_mat(cont(Vᵀ) [Tk, Dv, Hkv, B], P) = [Dv, Tq, Hq, B].
//   flash:  flash_attn_ext(Q F32 [D, Tq, Hq, B], K, V [D, Tk, Hkv, B] (F16 or F32),
//           mask F16 [Tk, Tq, 1, B], scale, 0, softcap) → [Dv, Hq, Tq, B] (permuted);
//           *-nomask passes NULL for the mask and refuses a call whose mask blocks anything.
#include "adapters/ggml/ggml_adapter.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

#include "ggml-cpu.h"
#include "ggml.h"

#include "adapters/adapter_fault.h"
#include "adapters/kv_cache.h"

namespace attncheck {
namespace {

// One ggml context sized for the call; freed on scope exit.
class Context {
 public:
  explicit Context(size_t data_bytes) {
    ggml_init_params params{};
    params.mem_size = data_bytes + 256 * ggml_tensor_overhead() + ggml_graph_overhead() + (1u << 20);
    params.mem_buffer = nullptr;
    params.no_alloc = false;
    ctx_ = ggml_init(params);
    if (ctx_ == nullptr) throw std::runtime_error("ggml: ggml_init failed");
  }
  ~Context() { ggml_free(ctx_); }
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  ggml_context* get() const { return ctx_; }

 private:
  ggml_context* ctx_ = nullptr;
};

void Compute(ggml_context* ctx, ggml_tensor* result, bool use_ref, int threads) {
  ggml_cgraph* graph = ggml_new_graph(ctx);
  ggml_build_forward_expand(graph, result);
  ggml_cplan plan = ggml_graph_plan(graph, threads, nullptr);
  std::vector<uint8_t> work(plan.work_size);
  plan.work_data = work.empty() ? nullptr : work.data();
  plan.use_ref = use_ref;
  if (ggml_graph_compute(graph, &plan) != GGML_STATUS_SUCCESS) throw std::runtime_error("ggml: compute failed");
}

ggml_tensor* NewF32(ggml_context* ctx, std::span<const float> data, int64_t n0, int64_t n1, int64_t n2, int64_t n3) {
  ggml_tensor* t = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, n0, n1, n2, n3);
  std::memcpy(t->data, data.data(), static_cast<size_t>(n0 * n1 * n2 * n3) * sizeof(float));
  return t;
}

ggml_tensor* NewTyped(ggml_context* ctx, ggml_type type, std::span<const float> data, int64_t n0, int64_t n1,
                      int64_t n2, int64_t n3) {
  if (type == GGML_TYPE_F32) return NewF32(ctx, data, n0, n1, n2, n3);
  ggml_tensor* t = ggml_new_tensor_4d(ctx, type, n0, n1, n2, n3);
  ggml_fp32_to_fp16_row(data.data(), static_cast<ggml_fp16_t*>(t->data), n0 * n1 * n2 * n3);
  return t;
}

// ggml's RoPE parameters for the case's spec (only the scalings capabilities list).
struct RopeParams {
  int n_dims = 0, mode = 0, n_ctx_orig = 0;
  float freq_base = 10000, freq_scale = 1, ext_factor = 0, attn_factor = 1, beta_fast = 32, beta_slow = 1;
};

RopeParams RopeParamsFor(const KernelSpec& c) {
  const RopeSpec& spec = c.encoding.rope;
  RopeParams p;
  p.n_dims = c.rotary_dim();
  p.mode = spec.layout == RopeLayout::kInterleaved ? 0 : GGML_ROPE_TYPE_NEOX;
  p.n_ctx_orig = spec.original_context;
  p.freq_base = static_cast<float>(spec.base);
  p.beta_fast = static_cast<float>(spec.beta_fast);
  p.beta_slow = static_cast<float>(spec.beta_slow);
  switch (spec.scaling) {
    case RopeScaling::kNone:
      break;
    case RopeScaling::kLinear:
      p.freq_scale = static_cast<float>(1.0 / spec.factor);
      break;
    case RopeScaling::kYarn: {
      // As llama.cpp: freq_scale = 1/s, ext_factor = 1. ggml multiplies the
      // magnitude by attn_factor·(1 + 0.1·ln s) itself (ops.cpp rope_yarn); the
      // spec's attn_factor replaces that product, so it is divided out.
      p.freq_scale = static_cast<float>(1.0 / spec.factor);
      p.ext_factor = 1.0f;
      p.attn_factor = spec.attn_factor > 0
                          ? static_cast<float>(spec.attn_factor / (1.0 + 0.1 * std::log(spec.factor)))
                          : 1.0f;
      break;
    }
    default:
      throw std::invalid_argument("ggml: RoPE scaling not supported");
  }
  return p;
}

// x [B, H, T, D] rotated at positions [B, T] by ggml_rope_ext → out [B, H, T, D].
void GgmlRope(const KernelSpec& c, int batch, int heads, int tokens, int head_dim, std::span<const float> x,
              std::span<const int> positions, std::span<float> out) {
  const size_t n = static_cast<size_t>(batch) * heads * tokens * head_dim;
  if (n == 0) return;
  const RopeParams p = RopeParamsFor(c);
  Context ctx(3 * n * sizeof(float) + static_cast<size_t>(batch) * tokens * sizeof(int32_t));
  ggml_tensor* a = ggml_new_tensor_3d(ctx.get(), GGML_TYPE_F32, head_dim, heads, int64_t{batch} * tokens);
  ggml_tensor* pos = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_I32, int64_t{batch} * tokens);
  float* ad = static_cast<float*>(a->data);
  for (int b = 0; b < batch; ++b)
    for (int h = 0; h < heads; ++h)
      for (int t = 0; t < tokens; ++t)
        std::memcpy(ad + ((static_cast<size_t>(b) * tokens + t) * heads + h) * head_dim,
                    x.data() + ((static_cast<size_t>(b) * heads + h) * tokens + t) * head_dim,
                    static_cast<size_t>(head_dim) * sizeof(float));
  std::memcpy(pos->data, positions.data(), static_cast<size_t>(batch) * tokens * sizeof(int32_t));
  ggml_tensor* r = ggml_rope_ext(ctx.get(), a, pos, nullptr, p.n_dims, p.mode, p.n_ctx_orig, p.freq_base,
                                 p.freq_scale, p.ext_factor, p.attn_factor, p.beta_fast, p.beta_slow);
  Compute(ctx.get(), r, false, 1);
  const float* rd = static_cast<const float*>(r->data);
  for (int b = 0; b < batch; ++b)
    for (int h = 0; h < heads; ++h)
      for (int t = 0; t < tokens; ++t)
        std::memcpy(out.data() + ((static_cast<size_t>(b) * heads + h) * tokens + t) * head_dim,
                    rd + ((static_cast<size_t>(b) * tokens + t) * heads + h) * head_dim,
                    static_cast<size_t>(head_dim) * sizeof(float));
}

// The mask as an additive float [B, Tq, Tk]: the convention's fill is passed as
// it is (−inf, or the finite lowest value: ggml sees what a caller would give it).
std::vector<float> AdditiveMask(const MaskArgs& mask, size_t size) {
  if (mask.convention != MaskConvention::kAdditiveNegInf && mask.convention != MaskConvention::kAdditiveLowest) {
    throw std::invalid_argument("ggml: only additive (−inf / lowest) masks are accepted");
  }
  if (mask.additive.size() != size) throw std::invalid_argument("ggml: mask size");
  return {mask.additive.begin(), mask.additive.end()};
}

enum class Kernel { kSoftMax, kFlash };

struct Shapes {
  int batch, q_heads, kv_heads, tq, tk, head_dim, value_dim;
};

// The `ggml` graph: S = mul_mat(K, Q) [Tk, Tq, Hq, B], P = soft_max_ext(S, mask, scale, 0),
// O = mul_mat(cont(Vᵀ), P) [Dv, Tq, Hq, B]. q [D, Tq, Hq, B], k [D, Tk, Hkv, B],
// v [Dv, Tk, Hkv, B], mask [Tk, Tq, 1, B], all F32.
ggml_tensor* SoftMaxAttention(ggml_context* c, ggml_tensor* q, ggml_tensor* k, ggml_tensor* v, ggml_tensor* mask,
                              float scale) {
  ggml_tensor* scores = ggml_mul_mat(c, k, q);  // [Tk, Tq, Hq, B]
  ggml_tensor* probs = ggml_soft_max_ext(c, scores, mask, scale, 0.0f);
  ggml_tensor* v_t = ggml_cont(c, ggml_transpose(c, v));  // [Tk, Dv, Hkv, B]
  return ggml_mul_mat(c, v_t, probs);                      // [Dv, Tq, Hq, B]
}

// A gradient tensor as ggml left it (possibly a transposed view: the gradient of V
// reaches it through ggml_transpose) copied to row-major `out`, ne[0] fastest.
void CopyStrided(const ggml_tensor* t, std::span<float> out) {
  if (t->type != GGML_TYPE_F32 || static_cast<size_t>(ggml_nelements(t)) != out.size()) {
    throw std::runtime_error("ggml backward: unexpected gradient tensor");
  }
  const char* base = static_cast<const char*>(t->data);
  size_t e = 0;
  for (int64_t i3 = 0; i3 < t->ne[3]; ++i3)
    for (int64_t i2 = 0; i2 < t->ne[2]; ++i2)
      for (int64_t i1 = 0; i1 < t->ne[1]; ++i1)
        for (int64_t i0 = 0; i0 < t->ne[0]; ++i0)
          std::memcpy(&out[e++], base + i0 * t->nb[0] + i1 * t->nb[1] + i2 * t->nb[2] + i3 * t->nb[3], sizeof(float));
}

// The backward of SoftMaxAttention by ggml's own automatic differentiation, for one
// graph over the batch: q, k and v are ggml_set_param leaves, the loss is
// sum(O ∘ dO) (ggml_set_loss takes a scalar; its gradient 1 times dO is dO exactly),
// ggml_build_backward_expand adds the gradient nodes (mul_mat → out_prod,
// soft_max_ext → soft_max_ext_back) and ggml_graph_reset seeds the loss gradient.
// The mask is no parameter (ggml asserts "backward pass for softmax mask not
// implemented" only when it would need a gradient).
void SoftMaxBackwardOnce(const Shapes& n, std::span<const float> q, std::span<const float> k,
                         std::span<const float> v, std::span<const float> mask, float scale,
                         std::span<const float> dout, std::span<float> dq, std::span<float> dk, std::span<float> dv) {
  const size_t q_size = dq.size(), k_size = dk.size(), v_size = dv.size(), out_size = dout.size();
  const size_t s_size = static_cast<size_t>(n.batch) * n.q_heads * n.tq * n.tk;
  // forward and gradient nodes: scores, P and their gradients and out_prod temporaries,
  // each input and output with its gradient, a grouped out_prod before its repeat_back
  const size_t floats = 4 * (q_size + k_size + v_size) + 3 * static_cast<size_t>(n.batch) * n.q_heads * n.tk *
                        (n.head_dim + n.value_dim) + 8 * s_size + mask.size() + 4 * out_size;
  const size_t graph_size = GGML_DEFAULT_GRAPH_SIZE;
  Context ctx(floats * sizeof(float) + ggml_graph_overhead_custom(graph_size, true) + 256 * 1024);
  ggml_context* c = ctx.get();
  ggml_tensor* qt = NewF32(c, q, n.head_dim, n.tq, n.q_heads, n.batch);
  ggml_tensor* kt = NewF32(c, k, n.head_dim, n.tk, n.kv_heads, n.batch);
  ggml_tensor* vt = NewF32(c, v, n.value_dim, n.tk, n.kv_heads, n.batch);
  ggml_tensor* mt = NewF32(c, mask, n.tk, n.tq, 1, n.batch);
  ggml_tensor* upstream = NewF32(c, dout, n.value_dim, n.tq, n.q_heads, n.batch);
  for (ggml_tensor* param : {qt, kt, vt}) ggml_set_param(param);
  ggml_tensor* out = SoftMaxAttention(c, qt, kt, vt, mt, scale);
  ggml_tensor* loss = ggml_sum(c, ggml_mul(c, out, upstream));
  ggml_set_loss(loss);
  ggml_cgraph* graph = ggml_new_graph_custom(c, graph_size, /*grads=*/true);
  ggml_build_forward_expand(graph, loss);
  ggml_build_backward_expand(c, graph, nullptr);
  ggml_graph_reset(graph);
  ggml_cplan plan = ggml_graph_plan(graph, 1, nullptr);
  std::vector<uint8_t> work(plan.work_size);
  plan.work_data = work.empty() ? nullptr : work.data();
  if (ggml_graph_compute(graph, &plan) != GGML_STATUS_SUCCESS) throw std::runtime_error("ggml: compute failed");
  const std::array<std::pair<ggml_tensor*, std::span<float>>, 3> gradients = {{{qt, dq}, {kt, dk}, {vt, dv}}};
  for (const auto& [param, into] : gradients) {
    const ggml_tensor* grad = ggml_graph_get_grad(graph, param);
    if (grad == nullptr) throw std::runtime_error("ggml backward: a parameter got no gradient node");
    CopyStrided(grad, into);
  }
}

// q [B, Hq, Tq, D], k [B, Hkv, Tk, D], v [B, Hkv, Tk, Dv] (encoded), additive mask
// [B, Tq, Tk], dout [B, Hq, Tq, Dv] → dq, dk, dv of the same shapes as q, k, v. With
// grouped heads and more than one batch row, one graph per row: mul_mat's backward
// sums a broadcast src0's gradient only when ne[3] = 1 (ggml.c ggml_compute_backward,
// GGML_OP_MUL_MAT: GGML_ASSERT(tmp->ne[3] == 1), an abort).
void GgmlSoftMaxBackward(const Shapes& n, std::span<const float> q, std::span<const float> k,
                         std::span<const float> v, const std::vector<float>& mask, float scale,
                         std::span<const float> dout, std::span<float> dq, std::span<float> dk, std::span<float> dv) {
  if (dq.empty() && dk.empty()) return;
  if (n.tk == 0) throw std::invalid_argument("ggml: no keys");
  if (n.q_heads == n.kv_heads || n.batch == 1) {
    SoftMaxBackwardOnce(n, q, k, v, mask, scale, dout, dq, dk, dv);
    return;
  }
  Shapes row = n;
  row.batch = 1;
  const size_t nq = q.size() / n.batch, nk = k.size() / n.batch, nv = v.size() / n.batch,
               nm = mask.size() / n.batch, no = dout.size() / n.batch;
  for (int b = 0; b < n.batch; ++b) {
    SoftMaxBackwardOnce(row, q.subspan(b * nq, nq), k.subspan(b * nk, nk), v.subspan(b * nv, nv),
                        std::span<const float>(mask).subspan(b * nm, nm), scale, dout.subspan(b * no, no),
                        dq.subspan(b * nq, nq), dk.subspan(b * nk, nk), dv.subspan(b * nv, nv));
  }
}

struct Variant {
  std::string name;
  std::string description;
  Kernel kernel;
  ggml_type kv_type;
  bool use_ref;
  bool no_mask = false;  // flash_attn_ext with a NULL mask (cases where every key is visible)
  // ggml_graph_plan's n_threads: flash_attn_ext splits the query rows over threads, and
  // the keys of one query over threads from 512 keys (use_split_kv_path)
  int threads = 1;
};

// The refusal of a *-nomask variant: its call passes no mask, so only a case where every
// query sees every key (an additive mask of zeros) has an expression.
constexpr const char* kNoMaskRefusal =
    "ggml-flash-f32-nomask passes NULL for the mask: only cases where every query sees every key";

// q [B, Hq, Tq, D], k [B, Hkv, Tk, D], v [B, Hkv, Tk, Dv] (already encoded),
// additive mask [B, Tq, Tk] → out [B, Hq, Tq, Dv]. With no_mask, flash_attn_ext gets NULL
// for the mask, which a mask of zeros means (ggml.c's ggml_flash_attn_ext checks the mask
// only `if (mask)`; it requires one only with ALiBi, max_bias > 0).
void GgmlAttend(const Variant& variant, const Shapes& n, std::span<const float> q, std::span<const float> k,
                std::span<const float> v, const std::vector<float>& mask, float scale, float softcap,
                std::span<float> out) {
  const size_t out_size = static_cast<size_t>(n.batch) * n.q_heads * n.tq * n.value_dim;
  if (out_size == 0) return;
  if (n.tk == 0) throw std::invalid_argument("ggml: no keys");
  // (a skip, "refused: …": the adapter sees only the mask it is handed, as the kernel would)
  if (variant.no_mask && std::ranges::any_of(mask, [](float m) { return m != 0.0f; })) throw CaseRefused(kNoMaskRefusal);
  const size_t q_size = static_cast<size_t>(n.batch) * n.q_heads * n.tq * n.head_dim;
  const size_t k_size = static_cast<size_t>(n.batch) * n.kv_heads * n.tk * n.head_dim;
  const size_t v_size = static_cast<size_t>(n.batch) * n.kv_heads * n.tk * n.value_dim;
  const size_t s_size = static_cast<size_t>(n.batch) * n.q_heads * n.tq * n.tk;
  Context ctx(4 * (q_size + k_size + 2 * v_size + 3 * s_size + mask.size() + 2 * out_size) + 64 * 1024);
  ggml_context* c = ctx.get();
  ggml_tensor* qt = NewF32(c, q, n.head_dim, n.tq, n.q_heads, n.batch);
  ggml_tensor* result = nullptr;
  if (variant.kernel == Kernel::kSoftMax) {
    ggml_tensor* kt = NewF32(c, k, n.head_dim, n.tk, n.kv_heads, n.batch);
    ggml_tensor* vt = NewF32(c, v, n.value_dim, n.tk, n.kv_heads, n.batch);
    ggml_tensor* mt = NewF32(c, mask, n.tk, n.tq, 1, n.batch);
    result = SoftMaxAttention(c, qt, kt, vt, mt, scale);
  } else {
    ggml_tensor* kt = NewTyped(c, variant.kv_type, k, n.head_dim, n.tk, n.kv_heads, n.batch);
    ggml_tensor* vt = NewTyped(c, variant.kv_type, v, n.value_dim, n.tk, n.kv_heads, n.batch);
    ggml_tensor* mt = variant.no_mask ? nullptr : NewTyped(c, GGML_TYPE_F16, mask, n.tk, n.tq, 1, n.batch);
    ggml_tensor* fa = ggml_flash_attn_ext(c, qt, kt, vt, mt, scale, 0.0f, softcap);  // [Dv, Hq, Tq, B]
    result = ggml_cont(c, ggml_permute(c, fa, 0, 2, 1, 3));                           // [Dv, Tq, Hq, B]
  }
  Compute(c, result, variant.use_ref, variant.threads);
  std::memcpy(out.data(), result->data, out_size * sizeof(float));
}

class GgmlSession final : public Session {
 public:
  GgmlSession(const Variant& variant, const SessionArgs& args)
      : variant_(variant), args_(args), cache_(args.batch, args.kv_heads, args.head_dim, args.value_dim) {
    if (args.apply_bias) throw std::invalid_argument("ggml: does not apply score biases itself");
  }

  // Rotates the chunk with ggml (its own positions) and caches it.
  void append(std::span<const float> k, std::span<const float> v, std::span<const int> positions,
              int n) override {
    std::vector<float> rotated(k.begin(), k.end());
    if (args_.apply_positional) {
      GgmlRope(args_.spec, args_.batch, args_.kv_heads, n, args_.head_dim, k, positions, rotated);
    }
    cache_.Append(rotated, v, positions, n);
  }

  void attend(std::span<const float> q, std::span<const int> positions, int tq, const MaskArgs& mask,
              std::span<float> out) override {
    const int length = cache_.length();
    const Shapes n{args_.batch, args_.q_heads, args_.kv_heads, tq, length, args_.head_dim, args_.value_dim};
    std::vector<float> query(q.begin(), q.end());
    if (args_.apply_positional) GgmlRope(args_.spec, n.batch, n.q_heads, tq, n.head_dim, q, positions, query);
    const std::vector<float> k = cache_.AllKeys(), v = cache_.AllValues();  // [B, Hkv, Tk, D] / [B, Hkv, Tk, Dv]
    GgmlAttend(variant_, n, query, k, v,
               AdditiveMask(mask, static_cast<size_t>(n.batch) * tq * length), static_cast<float>(args_.scale),
               static_cast<float>(args_.spec.softcap), out);
  }

 private:
  Variant variant_;
  SessionArgs args_;
  adapters::KvCache<float> cache_;
};

class GgmlAdapter final : public Adapter {
 public:
  explicit GgmlAdapter(Variant variant) : variant_(std::move(variant)) {}
  std::string name() const override { return variant_.name; }
  std::string description() const override { return variant_.description; }

  Capabilities capabilities() const override {
    Capabilities caps;
    caps.owns_rope = true;
    caps.owns_bias = false;  // ALiBi, T5, KERPLE, Sandwich folded into the mask by the harness
    caps.has_rope_stage = true;
    caps.has_session = true;
    caps.session_rope_as_call = true;  // GgmlSession rotates appended keys by GgmlRope, as a call does
    const bool flash = variant_.kernel == Kernel::kFlash;
    caps.dtypes = {flash && variant_.kv_type == GGML_TYPE_F16 ? Dtype::kF16 : Dtype::kF32};
    caps.masks = {MaskConvention::kAdditiveNegInf, MaskConvention::kAdditiveLowest};
    // The contract ggml keeps (adapters/ggml/README.md "Contract"): nothing documented for a
    // row with no visible key; only −INFINITY skips a key (a finite entry is a score term);
    // NaN in a masked slot is not kept out ("nan − INF is still nan", llama.cpp PR #3523).
    caps.masked_rows = MaskedRowPolicy::kUnspecified;
    caps.blocking = Blocking::kNegInfOnly;
    caps.nan_isolation = false;
    caps.encodings = {EncodingKind::kNone, EncodingKind::kRope,   EncodingKind::kAlibi,
                      EncodingKind::kT5,   EncodingKind::kKerple, EncodingKind::kSandwich};
    if (flash && variant_.kv_type == GGML_TYPE_F32) {
      // flash_attn_ext takes an F16 mask only: a score bias folded into it would be
      // rounded to f16, below what an f32 case allows. Bias kinds stay with ggml-flash.
      caps.encodings = {EncodingKind::kNone, EncodingKind::kRope};
      // f32's lowest (−3.4e38) becomes −inf in that F16 mask: add-lowest would be add-inf
      // under another name, and its finite-fill meaning could not be tested.
      caps.masks = {MaskConvention::kAdditiveNegInf};
    }
    caps.rope_layouts = {RopeLayout::kHalfSplit, RopeLayout::kInterleaved};
    caps.rope_scalings = {RopeScaling::kNone, RopeScaling::kLinear, RopeScaling::kYarn};
    caps.gqa = true;
    caps.softcap = flash;
    caps.value_dim_differs = !flash;
    caps.queries_beyond_keys = true;  // the KQ mask is any [Tq, Tk]
    // flash_attn_ext with K/V f16 accumulates V·e^(s − M) in an f16 buffer (ops.cpp
    // VKQ16, ggml_vec_mad_f16); its K·Q dot and the softmax stay in f32 (README).
    if (flash && variant_.kv_type == GGML_TYPE_F16) caps.accuracy.pv_accum = Dtype::kF16;
    // A quarter of the cases at the sizes where ggml switches kernels: flash_attn_ext
    // goes tiled at Tq ≥ GGML_FA_TILE_Q = 64 (ggml-cpu/ops.cpp, `use_tiled`) and
    // splits the keys over threads for one query at Tk ≥ 512 (`use_split_kv_path`);
    // mul_mat blocks its loops at these sizes too.
    caps.size_tier.percent = 25;
    caps.rope_log_n = false;  // ggml_rope_ext has no log-n query scaling (unsupported())
    caps.has_backward = !flash;  // backward(): the soft_max graph through ggml's autodiff
    return caps;
  }

  std::optional<std::string> unsupported(const Case& c) const override {
    if (c.encoding.kind == EncodingKind::kRope) {
      if (c.encoding.rope.log_n) return "ggml_rope_ext has no log-n query scaling";
      // At s = 1 (the least factor a case has) ggml's 1 + 0.1·ln s is 1 and its ramp
      // mixes two equal angles: no scaling, as the reference's YaRN at s = 1.
      if (c.encoding.rope.scaling == RopeScaling::kYarn && c.encoding.rope.factor < 1.0) {
        return "ggml's YaRN applies 1 + 0.1·ln s also for s < 1";
      }
    }
    if (c.key_len() == 0) return "ggml cannot attend over zero keys";
    return std::nullopt;
  }

  void attention(const AttentionArgs& a) override {
    if (a.apply_bias) throw std::invalid_argument("ggml: does not apply score biases itself");
    const Shapes n{a.batch, a.q_heads, a.kv_heads, a.tq, a.tk, a.head_dim, a.value_dim};
    std::vector<float> q(a.q.begin(), a.q.end()), k(a.k.begin(), a.k.end());
    if (a.apply_positional) {
      GgmlRope(a.spec, n.batch, n.q_heads, n.tq, n.head_dim, a.q, a.query_positions, q);
      GgmlRope(a.spec, n.batch, n.kv_heads, n.tk, n.head_dim, a.k, a.key_positions, k);
    }
    GgmlAttend(variant_, n, q, k, a.v,
               AdditiveMask(a.mask, static_cast<size_t>(n.batch) * n.tq * n.tk), static_cast<float>(a.scale),
               static_cast<float>(a.spec.softcap), a.out);
  }

  // `ggml` only: its graph through ggml's autodiff (GgmlSoftMaxBackward). flash_attn_ext
  // has none: ggml_compute_backward aborts on GGML_OP_FLASH_ATTN_EXT ("unsupported ggml
  // op for backward pass") and the legacy ggml_flash_attn_back aborts on entry (README).
  void backward(const BackwardArgs& args) override {
    const AttentionArgs& a = args.forward;
    if (variant_.kernel != Kernel::kSoftMax) throw std::logic_error("ggml: flash_attn_ext has no backward");
    if (a.apply_bias || a.apply_positional) throw std::invalid_argument("ggml backward: q and k arrive encoded");
    const Shapes n{a.batch, a.q_heads, a.kv_heads, a.tq, a.tk, a.head_dim, a.value_dim};
    GgmlSoftMaxBackward(n, a.q, a.k, a.v, AdditiveMask(a.mask, static_cast<size_t>(n.batch) * n.tq * n.tk),
                        static_cast<float>(a.scale), args.dout, args.dq, args.dk, args.dv);
  }

  void rope(const RopeArgs& a) override {
    GgmlRope(a.spec, a.batch, a.heads, a.tokens, a.head_dim, a.x, a.positions, a.out);
  }

  std::unique_ptr<Session> open_session(const SessionArgs& args) override {
    return std::make_unique<GgmlSession>(variant_, args);
  }

 private:
  Variant variant_;
};

}  // namespace

std::vector<std::function<std::unique_ptr<Adapter>()>> GgmlAdapterFactories() {
  const std::vector<Variant> variants = {
      {"ggml", "ggml CPU: rope_ext + mul_mat + soft_max_ext (F32 mask) + mul_mat, f32, KV cache",
       Kernel::kSoftMax, GGML_TYPE_F32, false},
      {"ggml-flash", "ggml CPU flash_attn_ext: Q f32, K/V f16, f16 mask, softcap", Kernel::kFlash,
       GGML_TYPE_F16, false},
      {"ggml-flash-ref", "ggml CPU flash_attn_ext on the reference path (cplan.use_ref), K/V f16",
       Kernel::kFlash, GGML_TYPE_F16, true},
      {"ggml-flash-f32", "ggml CPU flash_attn_ext with K/V f32 (f32 accumulation), f16 mask",
       Kernel::kFlash, GGML_TYPE_F32, false},
      {"ggml-flash-4t",
       "ggml CPU flash_attn_ext as ggml-flash on 4 threads: query rows split over them, and one query's keys "
       "from 512 (split-KV path)",
       Kernel::kFlash, GGML_TYPE_F16, false, false, 4},
      {"ggml-flash-f32-nomask",
       "ggml CPU flash_attn_ext with K/V f32 and no mask (NULL): only cases where every query sees every key",
       Kernel::kFlash, GGML_TYPE_F32, false, true},
  };
  std::vector<std::function<std::unique_ptr<Adapter>()>> factories;
  for (const Variant& variant : variants) {
    factories.push_back([variant] { return std::make_unique<GgmlAdapter>(variant); });
  }
  return factories;
}

}  // namespace attncheck
