// The libtorch adapters (libtorch_adapter.h, README.md). The only file that sees
// torch headers. Every call copies the harness's float32 buffers into CPU tensors of
// the case dtype, runs the PyTorch 1.13 op on one intra-op thread, and copies the
// result back as float32. The backward is autograd through that same call (q, k, v
// leaves with requires_grad, out.backward(dO)), also on one thread.
//
// Layouts: the harness's row-major [B, H, T, D] is what sdpa and matmul take as is.
//   sdpa:            _scaled_dot_product_attention(q, k, v, mask [B, 1, Tq, Tk] bool
//                    true = attend, dropout 0, need_attn_weights false, is_causal).
//   masked-softmax:  S = matmul(q, kᵀ)·scale [B, H, Tq, Tk]; P = _masked_softmax(S,
//                    mask [B, H, Tq, Tk] bool true = masked out, dim 3); O = matmul(P, v).
//   mha:             multi_head_attention_forward takes (T, N, E = H·D) with its own
//                    projections: in_proj = three stacked identities, out_proj = the
//                    identity, no biases, so the output is the raw attention. One call
//                    per batch row (N = 1), since the C++ frontend adds a 2-D
//                    attn_mask [Tq, Tk] only; key_padding_mask [1, Tk] marks keys no
//                    query of the row may read.
#include "adapters/libtorch/libtorch_adapter.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/core/grad_mode.h>
#include <torch/nn/functional/activation.h>

#include <cmath>
#include <cstring>
#include <fmt/format.h>
#include <mutex>
#include <stdexcept>

namespace attncheck {
namespace {

namespace F = torch::nn::functional;

void SingleThreaded() {
  static std::once_flag once;
  std::call_once(once, [] { at::set_num_threads(1); });
}

at::ScalarType TorchType(Dtype dtype) {
  switch (dtype) {
    case Dtype::kF32:
      return at::kFloat;
    case Dtype::kBf16:
      return at::kBFloat16;
    case Dtype::kF16:
      return at::kHalf;
  }
  throw std::invalid_argument("libtorch: unknown dtype");
}

// A tensor of the case dtype holding a copy of `data` with `sizes`.
at::Tensor FromFloats(std::span<const float> data, at::IntArrayRef sizes, Dtype dtype) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  if (static_cast<int64_t>(data.size()) != n) throw std::invalid_argument("libtorch: buffer size");
  at::Tensor t = at::empty(sizes, at::TensorOptions().dtype(at::kFloat));
  if (n > 0) std::memcpy(t.data_ptr<float>(), data.data(), static_cast<size_t>(n) * sizeof(float));
  return dtype == Dtype::kF32 ? t : t.to(TorchType(dtype));
}

at::Tensor FromBools(std::span<const uint8_t> data, at::IntArrayRef sizes) {
  at::Tensor t = at::empty(sizes, at::TensorOptions().dtype(at::kBool));
  if (static_cast<int64_t>(data.size()) != t.numel()) throw std::invalid_argument("libtorch: mask size");
  bool* p = t.data_ptr<bool>();
  for (size_t i = 0; i < data.size(); ++i) p[i] = data[i] != 0;
  return t;
}

void ToFloats(const at::Tensor& t, std::span<float> out) {
  const at::Tensor f = t.to(at::kFloat).contiguous();
  if (static_cast<size_t>(f.numel()) != out.size()) {
    throw std::runtime_error(fmt::format("libtorch: result has {} elements, expected {}", f.numel(), out.size()));
  }
  if (!out.empty()) std::memcpy(out.data(), f.data_ptr<float>(), out.size() * sizeof(float));
}

// 1.13's sdpa and MHA have no scale argument: both use 1/sqrt(D).
// scale: the case's (0 = 1/sqrt(D)).
std::optional<std::string> FixedScaleOnly(int head_dim, double scale, std::string_view what) {
  const double fixed = 1.0 / std::sqrt(static_cast<double>(head_dim));
  if (scale != 0.0 && std::abs(scale - fixed) > 1e-12 * fixed) {
    return fmt::format("{} has no scale argument (always 1/sqrt(D)); case scale {}", what, scale);
  }
  return std::nullopt;
}

const std::vector<EncodingKind> kQkEncodings = {EncodingKind::kNone, EncodingKind::kRope, EncodingKind::kSinusoidal,
                                                EncodingKind::kLearned, EncodingKind::kXpos};

enum class Kind { kSdpa, kMaskedSoftmax, kMha };

struct Variant {
  std::string name;
  std::string description;
  Kind kind;
  std::vector<MaskConvention> masks;
};

class LibtorchAdapter final : public Adapter {
 public:
  explicit LibtorchAdapter(Variant variant) : variant_(std::move(variant)) { SingleThreaded(); }
  std::string name() const override { return variant_.name; }
  std::string description() const override { return variant_.description; }

  Capabilities capabilities() const override {
    Capabilities caps;
    caps.owns_rope = false;  // q and k arrive encoded
    caps.owns_bias = false;
    // CPU matmul in 1.13 has no f16. The C++ frontend's MHA applies key_padding_mask
    // under AT_DISPATCH_FLOATING_TYPES (float, double): bf16 throws (FINDINGS.md).
    caps.dtypes = {Dtype::kF32, Dtype::kBf16};
    if (variant_.kind == Kind::kMha) caps.dtypes = {Dtype::kF32};
    caps.masks = variant_.masks;
    // The contract (adapters/libtorch/README.md "Contract"): none of the three documents a
    // row with no visible key; a float mask is added to the scores, so only −inf blocks;
    // the masked probabilities are 0 and 0·NaN = NaN in the P·V matmul.
    caps.masked_rows = MaskedRowPolicy::kUnspecified;
    caps.blocking = Blocking::kNegInfOnly;
    caps.nan_isolation = false;
    caps.encodings = kQkEncodings;
    if (variant_.kind == Kind::kMha) {
      // a float attn_mask is added to the scores: score biases fold into it
      for (EncodingKind e : {EncodingKind::kAlibi, EncodingKind::kT5, EncodingKind::kKerple, EncodingKind::kSandwich})
        caps.encodings.push_back(e);
    }
    caps.gqa = false;  // no 1.13 API broadcasts kv heads
    // sdpa and MHA scale by 1/sqrt(D) (FixedScaleOnly); _masked_softmax takes our scores
    caps.scale_argument = variant_.kind == Kind::kMaskedSoftmax;
    caps.softcap = false;
    // sdpa documents value (N, ..., S, E); MHA asserts key.sizes() == value.sizes()
    caps.value_dim_differs = variant_.kind == Kind::kMaskedSoftmax;
    caps.queries_beyond_keys = true;  // dense masks of any [Tq, Tk]; flags are chosen only where they fit
    // Every ATen op returns the input dtype: the scores of matmul and the softmax's P
    // are stored in bf16 before the next op; matmul accumulates in f32 (README).
    caps.accuracy.scores_in_input_dtype = true;
    caps.accuracy.p_in_input_dtype = true;
    // A fifth of the cases large: 1.13 has no fused CPU sdpa (flash and
    // mem-efficient are CUDA only; the CPU dispatch of _scaled_dot_product_attention
    // _forward is _forward_math), so the size paths on CPU are those of bmm/matmul
    // and the vectorised softmax, which block and vectorise by size.
    caps.size_tier.percent = 20;
    // autograd through the same call (backward()); README "Backward"
    caps.has_backward = true;
    return caps;
  }

  std::optional<std::string> unsupported(const Case& c) const override {
    if (c.key_len() == 0) return "libtorch: no keys";
    if (variant_.kind == Kind::kSdpa) return FixedScaleOnly(c.head_dim, c.scale, "at::_scaled_dot_product_attention (1.13)");
    if (variant_.kind == Kind::kMha) return FixedScaleOnly(c.head_dim, c.scale, "multi_head_attention_forward");
    return std::nullopt;
  }

  void attention(const AttentionArgs& a) override {
    const Inputs in = Prepare(a);
    ToFloats(Forward(in.q, in.k, in.v, a), a.out);
  }

  // Autograd through the very call attention() makes: q, k and v are leaves of the
  // case dtype with requires_grad, dO enters as out.backward(dout) in that dtype, and
  // the leaves' .grad are the gradients (an unreached leaf has none: 0).
  void backward(const BackwardArgs& args) override {
    const AttentionArgs& a = args.forward;
    const at::AutoGradMode grad_mode(true);
    Inputs in = Prepare(a);
    for (at::Tensor* leaf : {&in.q, &in.k, &in.v}) leaf->requires_grad_(true);
    const at::Tensor out = Forward(in.q, in.k, in.v, a);
    out.backward(FromFloats(args.dout, out.sizes(), a.spec.dtype));
    const auto gradient = [](const at::Tensor& leaf) {
      return leaf.grad().defined() ? leaf.grad() : at::zeros_like(leaf);
    };
    ToFloats(gradient(in.q), args.dq);
    ToFloats(gradient(in.k), args.dk);
    ToFloats(gradient(in.v), args.dv);
  }

 private:
  struct Inputs {
    at::Tensor q, k, v;  // [B, H, Tq, D], [B, H, Tk, D], [B, H, Tk, Dv] in the case dtype
  };

  static Inputs Prepare(const AttentionArgs& a) {
    if (a.apply_bias || a.apply_positional) throw std::invalid_argument("libtorch: owns no encoding stage");
    if (a.q_heads != a.kv_heads) throw std::invalid_argument("libtorch: GQA not supported");
    const Dtype dtype = a.spec.dtype;
    const int64_t b = a.batch, h = a.q_heads, tq = a.tq, tk = a.tk, d = a.head_dim, dv = a.value_dim;
    return {FromFloats(a.q, {b, h, tq, d}, dtype), FromFloats(a.k, {b, h, tk, d}, dtype),
            FromFloats(a.v, {b, h, tk, dv}, dtype)};
  }

  // The variant's op on q, k, v: out [B, H, Tq, Dv] in the case dtype.
  at::Tensor Forward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const AttentionArgs& a) const {
    const int64_t b = a.batch, h = a.q_heads, tq = a.tq, tk = a.tk, d = a.head_dim;
    switch (variant_.kind) {
      case Kind::kSdpa:
        return Sdpa(q, k, v, a.mask, b, tq, tk);
      case Kind::kMaskedSoftmax:
        return MaskedSoftmax(q, k, v, a.mask, a.scale, b, h, tq, tk);
      case Kind::kMha:
        return Mha(q, k, v, a.mask, a.spec.dtype, b, h, tq, tk, d);
    }
    throw std::invalid_argument("libtorch: unknown variant");
  }

  static at::Tensor Sdpa(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const MaskArgs& mask,
                         int64_t b, int64_t tq, int64_t tk) {
    if (IsCausalFlag(mask.convention)) {
      return std::get<0>(at::_scaled_dot_product_attention(q, k, v, c10::nullopt, 0.0, false, /*is_causal=*/true));
    }
    if (mask.convention != MaskConvention::kBoolVisible) throw std::invalid_argument("libtorch-sdpa: mask convention");
    const at::Tensor m = FromBools(mask.boolean, {b, 1, tq, tk});
    return std::get<0>(at::_scaled_dot_product_attention(q, k, v, m, 0.0, false, /*is_causal=*/false));
  }

  static at::Tensor MaskedSoftmax(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                  const MaskArgs& mask, double scale, int64_t b, int64_t h, int64_t tq, int64_t tk) {
    if (mask.convention != MaskConvention::kBoolBlocked) {
      throw std::invalid_argument("libtorch-masked-softmax: mask convention");
    }
    const at::Tensor m = FromBools(mask.boolean, {b, 1, tq, tk}).expand({b, h, tq, tk}).contiguous();
    const at::Tensor scores = at::matmul(q, k.transpose(-2, -1)) * scale;
    // mask_type 2: a mask of the input's own shape (0 and 1 are the [L, L] and
    // [B, L] layouts of the transformer encoder's fast path)
    const at::Tensor p = at::_masked_softmax(scores, m, /*dim=*/3, /*mask_type=*/2);
    return at::matmul(p, v);
  }

  static at::Tensor Mha(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const MaskArgs& mask,
                        Dtype dtype, int64_t b, int64_t h, int64_t tq, int64_t tk, int64_t d) {
    const int64_t e = h * d;
    const at::TensorOptions options = at::TensorOptions().dtype(TorchType(dtype));
    const at::Tensor eye = at::eye(e).to(options);  // CPU eye has no bf16 kernel
    const at::Tensor in_proj = at::cat({eye, eye, eye}, 0);  // [3E, E]
    const bool boolean = IsBool(mask.convention);
    if (!boolean && mask.convention != MaskConvention::kAdditiveNegInf) {
      throw std::invalid_argument("libtorch-mha: mask convention");
    }
    at::Tensor full_mask = boolean ? FromBools(mask.boolean, {b, tq, tk})
                                   : FromFloats(mask.additive, {b, tq, tk}, dtype);
    std::vector<at::Tensor> rows;
    for (int64_t r = 0; r < b; ++r) {
      // (T, 1, H·D): token-major, heads side by side
      const at::Tensor qr = q[r].permute({1, 0, 2}).reshape({tq, 1, e});
      const at::Tensor kr = k[r].permute({1, 0, 2}).reshape({tk, 1, e});
      const at::Tensor vr = v[r].permute({1, 0, 2}).reshape({tk, 1, e});
      F::MultiheadAttentionForwardFuncOptions opts(e, h, in_proj, at::Tensor(), at::Tensor(), at::Tensor(),
                                                   /*add_zero_attn=*/false, /*dropout_p=*/0.0, eye, at::Tensor());
      opts.training(false).need_weights(false);
      const at::Tensor attn_mask = full_mask[r];  // [Tq, Tk]
      opts.attn_mask(attn_mask);
      if (boolean) {
        // keys no query of the row may read (true = ignored, the documented polarity)
        opts.key_padding_mask(attn_mask.all(/*dim=*/0).reshape({1, tk}));
      }
      const at::Tensor out = std::get<0>(F::multi_head_attention_forward(qr, kr, vr, opts));  // (Tq, 1, E)
      rows.push_back(out.reshape({tq, h, d}).permute({1, 0, 2}));                           // [H, Tq, D]
    }
    return at::stack(rows, 0);
  }

  Variant variant_;
};

}  // namespace

std::vector<std::function<std::unique_ptr<Adapter>()>> LibtorchAdapterFactories() {
  const std::array<Kind, 3> kinds = {Kind::kSdpa, Kind::kMaskedSoftmax, Kind::kMha};
  const std::array<std::vector<MaskConvention>, 3> masks = {
      std::vector{MaskConvention::kBoolVisible, MaskConvention::kCausalTopLeft},
      std::vector{MaskConvention::kBoolBlocked},
      std::vector{MaskConvention::kBoolBlocked, MaskConvention::kAdditiveNegInf}};
  std::vector<Variant> variants;
  for (size_t i = 0; i < kLibtorchAdapters.size(); ++i) {
    variants.push_back({std::string(kLibtorchAdapters[i].name), std::string(kLibtorchAdapters[i].description),
                        kinds[i], masks[i]});
  }
  std::vector<std::function<std::unique_ptr<Adapter>()>> factories;
  for (const Variant& variant : variants) {
    factories.push_back([variant] { return std::make_unique<LibtorchAdapter>(variant); });
  }
  return factories;
}

}  // namespace attncheck
