// The `plugin:<path>` adapter (plugin_adapter.h); loading and checking the table
// is plugin_table.h. Running: the harness's float buffers go to the
// plugin as they are for f32 cases (so its guard margins watch the plugin's own
// writes); f16 and bf16 cases get converted copies, and the output copy starts as
// a sentinel NaN so an element the plugin never writes stays unwritten for the
// harness too. An ABI 1 plugin is never handed an ABI 2 field; ABI 2 adds the
// visibility descriptor, refusal (a skip) and shape constraints; ABI 2.1 the
// backward call, its forward arguments converted as attention()'s are.
#include "adapters/plugin/plugin_adapter.h"

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <Eigen/Core>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "adapters/adapter_fault.h"
#include "adapters/packing.h"
#include "adapters/plugin/plugin_table.h"
#include "cases/error.h"
#include "cases/head_dims.h"

namespace attncheck::adapters {
namespace {

// The output copy's initial value: a half NaN with a payload float→half
// conversion of a computed value does not produce (payload bits 0x15A).
constexpr uint16_t kUnwritten16 = 0x7D5A;

// ---------------------------------------------------------------------------
// Tensors.

attncheck_tensor Contiguous(const void* data, attncheck_dtype dtype, const std::vector<int64_t>& shape) {
  attncheck_tensor t{};
  t.data = const_cast<void*>(data);  // inputs are read-only by contract; the guards check it
  t.dtype = dtype;
  t.rank = static_cast<int32_t>(shape.size());
  int n = 0;
  for (int64_t extent : shape) t.shape[n++] = extent;
  for (; n < 4; ++n) t.shape[n] = 1;
  int64_t stride = 1;
  for (int d = 3; d >= 0; --d) {
    t.strides[d] = stride;
    stride *= t.shape[d];
  }
  return t;
}

uint16_t ToBits16(float value, Dtype dtype) {
  return dtype == Dtype::kF16 ? Eigen::numext::bit_cast<uint16_t>(Eigen::half(value))
                              : Eigen::numext::bit_cast<uint16_t>(Eigen::bfloat16(value));
}
float FromBits16(uint16_t bits, Dtype dtype) {
  return dtype == Dtype::kF16 ? static_cast<float>(Eigen::numext::bit_cast<Eigen::half>(bits))
                              : static_cast<float>(Eigen::numext::bit_cast<Eigen::bfloat16>(bits));
}

// A float buffer as the plugin sees it: the harness's own memory for f32, a
// 16-bit copy otherwise.
class Input {
 public:
  Input(std::span<const float> values, Dtype dtype) : values_(values), dtype_(dtype) {
    if (dtype != Dtype::kF32) {
      bits_.resize(values.size());
      for (size_t e = 0; e < values.size(); ++e) bits_[e] = ToBits16(values[e], dtype);
    }
  }
  attncheck_tensor Tensor(const std::vector<int64_t>& shape) const {
    const void* data = dtype_ == Dtype::kF32 ? static_cast<const void*>(values_.data()) : bits_.data();
    return Contiguous(data, static_cast<attncheck_dtype>(dtype_), shape);
  }

 private:
  std::span<const float> values_;
  Dtype dtype_;
  std::vector<uint16_t> bits_;
};

class Output {
 public:
  Output(std::span<float> out, Dtype dtype) : out_(out), dtype_(dtype) {
    if (dtype != Dtype::kF32) bits_.assign(out.size(), kUnwritten16);
  }
  attncheck_tensor Tensor(const std::vector<int64_t>& shape) {
    void* data = dtype_ == Dtype::kF32 ? static_cast<void*>(out_.data()) : bits_.data();
    return Contiguous(data, static_cast<attncheck_dtype>(dtype_), shape);
  }
  // Copies a 16-bit result back; unwritten elements keep the harness's sentinel.
  void Finish() {
    if (dtype_ == Dtype::kF32) return;
    for (size_t e = 0; e < out_.size(); ++e) {
      if (bits_[e] != kUnwritten16) out_[e] = FromBits16(bits_[e], dtype_);
    }
  }

 private:
  std::span<float> out_;
  Dtype dtype_;
  std::vector<uint16_t> bits_;
};

// The mask in the plugin's terms: additive in the case dtype, bool as u8, causal
// flags without a tensor.
struct Mask {
  std::optional<Input> additive;
  attncheck_tensor tensor{};

  Mask(const MaskArgs& mask, Dtype dtype, int batch, int tq, int tk) {
    if (IsAdditive(mask.convention)) {
      additive.emplace(mask.additive, dtype);
      tensor = additive->Tensor({batch, tq, tk});
    } else if (IsBool(mask.convention)) {
      tensor = Contiguous(mask.boolean.data(), ATTNCHECK_DTYPE_U8, {batch, tq, tk});
    } else {
      tensor = Contiguous(nullptr, ATTNCHECK_DTYPE_U8, {batch, tq, tk});
    }
  }
};

// A descriptor call's visibility in the plugin's terms: arrays point into the
// C++ descriptor (valid for the call); an empty part is NULL.
attncheck_visibility VisibilityOf(const VisibilityDescriptor& d) {
  auto array = [](const std::vector<int32_t>& v) { return v.empty() ? nullptr : v.data(); };
  attncheck_visibility vis{};
  vis.causal = static_cast<int32_t>(d.causal);
  vis.window_left = d.window.left;
  vis.window_right = d.window.right;
  vis.num_sequences = d.sequences();
  vis.cu_seqlens_q = array(d.cu_seqlens_q);
  vis.cu_seqlens_k = array(d.cu_seqlens_k);
  vis.seqused_q = array(d.seqused_q);
  vis.seqused_k = array(d.seqused_k);
  vis.leftpad_k = array(d.leftpad_k);
  vis.prefix_len = array(d.prefix_len);
  vis.chunk = d.chunk;
  vis.page_size = d.paged.page_size;
  vis.max_blocks = d.paged.max_blocks;
  vis.num_pages = d.paged.num_pages;
  vis.block_table = array(d.paged.block_table);
  vis.alibi_slopes = d.alibi_slopes.empty() ? nullptr : d.alibi_slopes.data();
  vis.alibi_max_bias = d.alibi_max_bias;
  vis.softcap = d.softcap;
  return vis;
}

// The visibility handed over with a mask: set only for the descriptor convention.
struct Visibility {
  std::optional<attncheck_visibility> value;
  explicit Visibility(const MaskArgs& mask) {
    if (mask.convention != MaskConvention::kDescriptor) return;
    if (mask.descriptor == nullptr) throw std::logic_error("plugin: descriptor convention without a descriptor");
    value = VisibilityOf(*mask.descriptor);
  }
  const attncheck_visibility* get() const { return value ? &*value : nullptr; }
};

attncheck_rope_spec RopeSpecOf(const KernelSpec& c) {
  const RopeSpec& r = c.encoding.rope;
  attncheck_rope_spec spec{};
  spec.layout = static_cast<int32_t>(r.layout);
  spec.scaling = static_cast<int32_t>(r.scaling);
  spec.rotary_dim = c.rotary_dim();
  spec.original_context = r.original_context;
  spec.ntk_exact_exponent = r.ntk_exact_exponent ? 1 : 0;
  spec.log_n = r.log_n ? 1 : 0;
  spec.base = r.base;
  spec.factor = r.factor;
  spec.beta_fast = r.beta_fast;
  spec.beta_slow = r.beta_slow;
  spec.attn_factor = r.attn_factor;
  spec.low_freq_factor = r.low_freq_factor;
  spec.high_freq_factor = r.high_freq_factor;
  spec.mixed_b = r.mixed_b;
  return spec;
}

constexpr const char* kFoldedBiases =
    "plugin: a score bias reaches a C kernel folded into the mask, or as the descriptor's ALiBi (owns_bias 1)";

// One call's forward arguments in the plugin's terms (attention() and backward()):
// q, k, v and the mask in the case dtype, the visibility; `out` left for the call.
struct ForwardCall {
  Input q, k, v;
  Mask mask;
  Visibility visibility;
  attncheck_attention_args args{};

  explicit ForwardCall(const AttentionArgs& a)
      : q(a.q, a.spec.dtype), k(a.k, a.spec.dtype), v(a.v, a.spec.dtype),
        mask(a.mask, a.spec.dtype, a.batch, a.tq, a.tk), visibility(a.mask) {
    const VisibilityDescriptor* d = a.mask.descriptor;
    const bool descriptor_alibi = d != nullptr && (!d->alibi_slopes.empty() || d->alibi_max_bias > 0.0);
    if (a.apply_bias && !descriptor_alibi) throw std::invalid_argument(kFoldedBiases);
    args.batch = a.batch;
    args.q_heads = a.q_heads;
    args.kv_heads = a.kv_heads;
    args.tq = a.tq;
    args.tk = a.tk;
    args.head_dim = a.head_dim;
    args.value_dim = a.value_dim;
    args.q = q.Tensor({a.batch, a.q_heads, a.tq, a.head_dim});
    args.k = k.Tensor(KvShape(a, a.head_dim));  // the pages when paged
    args.v = v.Tensor(KvShape(a, a.value_dim));
    args.query_positions = Contiguous(a.query_positions.data(), ATTNCHECK_DTYPE_I32, {a.batch, a.tq});
    args.key_positions = Contiguous(a.key_positions.data(), ATTNCHECK_DTYPE_I32, {a.batch, a.tk});
    args.mask_convention = static_cast<int32_t>(a.mask.convention);
    args.mask = mask.tensor;
    args.apply_rope = a.apply_positional ? 1 : 0;
    args.rope = RopeSpecOf(a.spec);
    args.current_length = a.current_length;
    args.scale = a.scale;
    args.softcap = a.spec.softcap;
    args.visibility = visibility.get();  // an ABI 1 plugin's args end before it and never read it
  }
  ForwardCall(const ForwardCall&) = delete;
  ForwardCall& operator=(const ForwardCall&) = delete;
};

// ---------------------------------------------------------------------------

// The instance the plugin's create() made, destroyed with the adapter.
struct Instance {
  std::shared_ptr<PluginLibrary> library;
  void* handle = nullptr;
  ~Instance() {
    if (handle != nullptr && library->table->destroy != nullptr) library->table->destroy(handle);
  }
};

// A failed call: an ABI 2 refusal is a skip (CaseRefused), anything else an error.
[[noreturn]] void ThrowPluginError(const Instance& instance, const char* call, int rc) {
  const attncheck_adapter_v1& t = *instance.library->table;
  std::string why = OneLine(t.last_error(instance.handle));
  if (why.empty()) why = "(last_error() gave no message)";
  if (IsAbi2(t) && rc == ATTNCHECK_REFUSED) throw CaseRefused(fmt::format("plugin {}: {}(): {}", t.name, call, why));
  throw std::runtime_error(fmt::format("plugin {}: {}() returned {}: {}", t.name, call, rc, why));
}

class PluginSession final : public Session {
 public:
  PluginSession(std::shared_ptr<Instance> instance, const SessionArgs& args)
      : instance_(std::move(instance)), args_(args), dtype_(args.spec.dtype) {
    const attncheck_adapter_v1& t = table();
    attncheck_session_args s{};
    s.batch = args.batch;
    s.q_heads = args.q_heads;
    s.kv_heads = args.kv_heads;
    s.head_dim = args.head_dim;
    s.value_dim = args.value_dim;
    s.dtype = static_cast<int32_t>(dtype_);
    s.apply_rope = args.apply_positional ? 1 : 0;
    s.rope = RopeSpecOf(args.spec);
    s.current_length = args.current_length;
    s.scale = args.scale;
    s.softcap = args.spec.softcap;
    // A kernel owning its bias (ABI 2, descriptor only) gets ALiBi in each step's descriptor.
    if (args.apply_bias && t.capabilities.owns_bias == 0) throw std::invalid_argument(kFoldedBiases);
    const int rc = t.session_open(instance_->handle, &s, &session_);
    if (rc != 0) ThrowPluginError(*instance_, "session_open", rc);
    if (session_ == nullptr) throw std::runtime_error(fmt::format("plugin {}: session_open() gave no session", t.name));
  }
  ~PluginSession() override {
    if (session_ != nullptr) table().session_close(session_);
  }

  void append(std::span<const float> k, std::span<const float> v, std::span<const int> positions, int n) override {
    const Input k_in(k, dtype_), v_in(v, dtype_);
    const attncheck_tensor k_t = k_in.Tensor({args_.batch, args_.kv_heads, n, args_.head_dim});
    const attncheck_tensor v_t = v_in.Tensor({args_.batch, args_.kv_heads, n, args_.value_dim});
    const attncheck_tensor p_t = Contiguous(positions.data(), ATTNCHECK_DTYPE_I32, {args_.batch, n});
    const int rc = table().session_append(session_, &k_t, &v_t, &p_t, n);
    if (rc != 0) ThrowPluginError(*instance_, "session_append", rc);
    length_ += n;
  }

  void attend(std::span<const float> q, std::span<const int> positions, int tq, const MaskArgs& mask,
              std::span<float> out) override {
    const Input q_in(q, dtype_);
    const attncheck_tensor q_t = q_in.Tensor({args_.batch, args_.q_heads, tq, args_.head_dim});
    const attncheck_tensor p_t = Contiguous(positions.data(), ATTNCHECK_DTYPE_I32, {args_.batch, tq});
    const Mask m(mask, dtype_, args_.batch, tq, length_);
    const Visibility visibility(mask);
    Output o(out, dtype_);
    attncheck_tensor o_t = o.Tensor({args_.batch, args_.q_heads, tq, args_.value_dim});
    const attncheck_adapter_v1& t = table();
    const int32_t convention = static_cast<int32_t>(mask.convention);
    const int rc = IsAbi2(t) && t.session_attend_v2 != nullptr
                       ? t.session_attend_v2(session_, &q_t, &p_t, tq, convention, &m.tensor, visibility.get(), &o_t)
                       : t.session_attend(session_, &q_t, &p_t, tq, convention, &m.tensor, &o_t);
    if (rc != 0) ThrowPluginError(*instance_, "session_attend", rc);
    o.Finish();
  }

 private:
  const attncheck_adapter_v1& table() const { return *instance_->library->table; }
  std::shared_ptr<Instance> instance_;
  SessionArgs args_;
  Dtype dtype_;
  void* session_ = nullptr;
  int length_ = 0;
};

class PluginAdapter final : public Adapter {
 public:
  explicit PluginAdapter(std::shared_ptr<PluginLibrary> library) : instance_(std::make_shared<Instance>()) {
    instance_->library = std::move(library);
    const attncheck_adapter_v1& t = table();
    if (t.create != nullptr) {
      instance_->handle = t.create();
      if (instance_->handle == nullptr) {
        throw InputError(instance_->library->path, "create", "returned NULL: " + OneLine(t.last_error(nullptr)));
      }
    }
    caps_ = PluginCapabilities(t);
  }

  std::string name() const override { return "plugin:" + instance_->library->path; }
  std::string description() const override {
    const attncheck_adapter_v1& t = table();
    return fmt::format("{}: {}", t.name, OneLine(t.description));
  }
  Capabilities capabilities() const override { return caps_; }
  // The declared shape constraints hold on every case, drawn or replayed.
  std::optional<std::string> unsupported(const Case& c) const override {
    if (HeadDimAllowed(caps_, c.head_dim)) return std::nullopt;
    return fmt::format("head dim {} is not one the plugin takes (head_dim_multiple {}, head_dims {})", c.head_dim,
                       caps_.head_dim_multiple, caps_.head_dims.empty() ? "any" : fmt::format("{}", fmt::join(caps_.head_dims, " ")));
  }

  void attention(const AttentionArgs& a) override {
    const ForwardCall call(a);
    Output out(a.out, a.spec.dtype);
    attncheck_attention_args args = call.args;
    args.out = out.Tensor({a.batch, a.q_heads, a.tq, a.value_dim});
    const int rc = table().attention(instance_->handle, &args);
    if (rc != 0) ThrowPluginError(*instance_, "attention", rc);
    out.Finish();
  }

  // ABI 2.1: the forward's arguments as attention() gets them (out.data NULL), dout in,
  // dq, dk, dv out in the case dtype; the log-sum-exp (f32) where the table declares backward_lse; the
  // saved output and log-sum-exp in where it declares backward_saved (ABI 2.2).
  void backward(const BackwardArgs& b) override {
    if (!caps_.has_backward) throw std::logic_error("plugin: backward() called without has_backward");
    const AttentionArgs& a = b.forward;
    if (a.apply_positional) throw std::invalid_argument("plugin: backward() takes q and k already encoded");
    const Dtype dtype = a.spec.dtype;
    const ForwardCall call(a);
    const Input dout(b.dout, dtype);
    Output dq(b.dq, dtype), dk(b.dk, dtype), dv(b.dv, dtype);
    attncheck_backward_args args{};
    args.forward = call.args;
    const auto case_dtype = static_cast<attncheck_dtype>(dtype);
    args.forward.out = Contiguous(nullptr, case_dtype, {a.batch, a.q_heads, a.tq, a.value_dim});
    args.dout = dout.Tensor({a.batch, a.q_heads, a.tq, a.value_dim});
    args.dq = dq.Tensor({a.batch, a.q_heads, a.tq, a.head_dim});
    args.dk = dk.Tensor({a.batch, a.kv_heads, a.tk, a.head_dim});
    args.dv = dv.Tensor({a.batch, a.kv_heads, a.tk, a.value_dim});
    // f32 whatever the case dtype: the harness's buffer itself (set where backward_lse)
    args.lse = Contiguous(b.lse.empty() ? nullptr : b.lse.data(), ATTNCHECK_DTYPE_F32, {a.batch, a.q_heads, a.tq});
    // ABI 2.2 inputs (set where backward_saved): the saved output in the case dtype, the saved lse the
    // harness's f32 buffer itself
    const Input saved_out(b.saved_out, dtype);
    args.saved_out = b.saved_out.empty() ? Contiguous(nullptr, case_dtype, {a.batch, a.q_heads, a.tq, a.value_dim})
                                         : saved_out.Tensor({a.batch, a.q_heads, a.tq, a.value_dim});
    args.saved_lse = Contiguous(b.saved_lse.empty() ? nullptr : b.saved_lse.data(), ATTNCHECK_DTYPE_F32,
                                {a.batch, a.q_heads, a.tq});
    const int rc = table().backward(instance_->handle, &args);
    if (rc != 0) ThrowPluginError(*instance_, "backward", rc);
    dq.Finish();
    dk.Finish();
    dv.Finish();
  }

  void rope(const RopeArgs& a) override {
    if (!caps_.has_rope_stage) throw std::logic_error("plugin: rope() called without has_rope_stage");
    const Dtype dtype = a.spec.dtype;
    const Input x(a.x, dtype);
    Output out(a.out, dtype);
    attncheck_rope_args args{};
    args.batch = a.batch;
    args.heads = a.heads;
    args.tokens = a.tokens;
    args.head_dim = a.head_dim;
    args.x = x.Tensor({a.batch, a.heads, a.tokens, a.head_dim});
    args.positions = Contiguous(a.positions.data(), ATTNCHECK_DTYPE_I32, {a.batch, a.tokens});
    args.rope = RopeSpecOf(a.spec);
    args.current_length = a.current_length;
    args.out = out.Tensor({a.batch, a.heads, a.tokens, a.head_dim});
    const int rc = table().rope(instance_->handle, &args);
    if (rc != 0) ThrowPluginError(*instance_, "rope", rc);
    out.Finish();
  }

  std::unique_ptr<Session> open_session(const SessionArgs& args) override {
    if (!caps_.has_session) return nullptr;
    return std::make_unique<PluginSession>(instance_, args);
  }

 private:
  const attncheck_adapter_v1& table() const { return *instance_->library->table; }

  std::shared_ptr<Instance> instance_;
  Capabilities caps_;
};

}  // namespace
}  // namespace attncheck::adapters

namespace attncheck {

std::unique_ptr<Adapter> MakePluginAdapter(std::string_view path) {
  return std::make_unique<adapters::PluginAdapter>(adapters::LoadPlugin(path));
}

}  // namespace attncheck
