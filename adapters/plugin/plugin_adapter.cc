// The `plugin:<path>` adapter (plugin_adapter.h). Loading: dlopen(RTLD_NOW |
// RTLD_LOCAL), dlsym("attncheck_adapter_entry"), then every field of the table is
// checked before anything runs. Running: the harness's float buffers go to the
// plugin as they are for f32 cases (so its guard margins watch the plugin's own
// writes); f16 and bf16 cases get converted copies, and the output copy starts as
// a sentinel NaN so an element the plugin never writes stays unwritten for the
// harness too. ABI 1 and ABI 2 tables are both taken: an ABI 1 table is read only
// up to its struct_size and never handed an ABI 2 field; ABI 2 adds the visibility
// descriptor, refusal (a skip) and shape constraints.
#include "adapters/plugin/plugin_adapter.h"

#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <Eigen/Core>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "adapters/adapter_fault.h"
#include "attncheck/adapter.h"
#include "cases/error.h"
#include "cases/head_dims.h"

namespace attncheck::adapters {
namespace {

// The enums of the ABI mirror the C++ ones value for value.
static_assert(ATTNCHECK_DTYPE_F32 == static_cast<int>(Dtype::kF32));
static_assert(ATTNCHECK_DTYPE_F16 == static_cast<int>(Dtype::kF16));
static_assert(ATTNCHECK_DTYPE_BF16 == static_cast<int>(Dtype::kBf16));
static_assert(ATTNCHECK_MASK_CAUSAL_BOTTOM_RIGHT == static_cast<int>(MaskConvention::kCausalBottomRight));
static_assert(ATTNCHECK_MASK_DESCRIPTOR == static_cast<int>(MaskConvention::kDescriptor));
static_assert(static_cast<int>(CausalAlignment::kTopLeft) == 1 && static_cast<int>(CausalAlignment::kBottomRight) == 2);
static_assert(ATTNCHECK_ENCODING_SANDWICH == static_cast<int>(EncodingKind::kSandwich));
static_assert(ATTNCHECK_ROPE_HALF_SPLIT == static_cast<int>(RopeLayout::kHalfSplit));
static_assert(ATTNCHECK_ROPE_SCALING_YARN_PAPER == static_cast<int>(RopeScaling::kYarnPaper));
static_assert(ATTNCHECK_MASKED_ROWS_UNSPECIFIED == static_cast<int>(MaskedRowPolicy::kUnspecified));
static_assert(ATTNCHECK_MASKED_ROWS_MEAN_V == static_cast<int>(MaskedRowPolicy::kMeanV));
static_assert(ATTNCHECK_BLOCKING_NEG_INF == static_cast<int>(Blocking::kNegInfOnly));

constexpr uint32_t Bit(int n) { return 1u << n; }
constexpr uint32_t kDtypeBits = Bit(ATTNCHECK_DTYPE_F32) | Bit(ATTNCHECK_DTYPE_F16) | Bit(ATTNCHECK_DTYPE_BF16);
constexpr uint32_t kMaskBitsV1 = Bit(8) - 1;
constexpr uint32_t kMaskBits = Bit(ATTNCHECK_MASK_DESCRIPTOR + 1) - 1;
constexpr uint32_t kFormBits = Bit(ATTNCHECK_FORM_SOFTCAP + 1) - 1;
constexpr uint32_t kEncodingBits = Bit(9) - 1;
constexpr uint32_t kLayoutBits = Bit(2) - 1;
constexpr uint32_t kScalingBits = Bit(8) - 1;
// q/k encodings other than RoPE: a plugin that owns RoPE would have to apply them
// too, and the ABI 1 rope spec does not describe them.
constexpr uint32_t kOtherQkEncodings =
    Bit(ATTNCHECK_ENCODING_SINUSOIDAL) | Bit(ATTNCHECK_ENCODING_LEARNED) | Bit(ATTNCHECK_ENCODING_XPOS);

// The output copy's initial value: a half NaN with a payload float→half
// conversion of a computed value does not produce (payload bits 0x15A).
constexpr uint16_t kUnwritten16 = 0x7D5A;

// ---------------------------------------------------------------------------
// The loaded library, shared by every adapter instance made from it.

struct Library {
  std::string path;
  void* handle = nullptr;
  const attncheck_adapter_v1* table = nullptr;
  ~Library() {
    if (handle != nullptr) dlclose(handle);
  }
};

[[noreturn]] void Refuse(const std::string& path, const std::string& field, const std::string& reason) {
  throw InputError(path, field, reason);
}

std::string OneLine(const char* text) {
  std::string line = text == nullptr ? std::string() : std::string(text);
  for (char& ch : line) {
    if (ch == '\n' || ch == '\r') ch = ' ';
  }
  if (line.size() > 400) line = line.substr(0, 400) + "…";
  return line;
}

void CheckFlag(const std::string& path, const char* field, int32_t value) {
  if (value != 0 && value != 1) Refuse(path, std::string("capabilities.") + field, fmt::format("{} is not 0 or 1", value));
}

void CheckBits(const std::string& path, const char* field, uint32_t bits, uint32_t known, bool may_be_empty) {
  if ((bits & ~known) != 0) {
    Refuse(path, std::string("capabilities.") + field, fmt::format("unknown bits 0x{:x} (known: 0x{:x})", bits & ~known, known));
  }
  if (bits == 0 && !may_be_empty) Refuse(path, std::string("capabilities.") + field, "empty set");
}

// The table's contract, or nullptr for an ABI 1.0 table (its struct_size ends before it).
const attncheck_contract* ContractOf(const attncheck_adapter_v1& t) {
  return t.struct_size >= ATTNCHECK_ADAPTER_V1_1_SIZE ? &t.contract : nullptr;
}

bool IsV2(const attncheck_adapter_v1& t) { return t.abi_version >= 2; }

// The ABI 2 fields: descriptor forms, page size, shape constraints, session_attend_v2.
void ValidateV2(const std::string& path, const attncheck_adapter_v1& t) {
  const bool descriptor = (t.capabilities.masks & Bit(ATTNCHECK_MASK_DESCRIPTOR)) != 0;
  if ((t.descriptor_forms & ~kFormBits) != 0) {
    Refuse(path, "descriptor_forms", fmt::format("unknown bits 0x{:x} (known: 0x{:x})", t.descriptor_forms & ~kFormBits, kFormBits));
  }
  if (descriptor && t.descriptor_forms == 0) Refuse(path, "descriptor_forms", "empty set while masks include DESCRIPTOR");
  if (!descriptor && t.descriptor_forms != 0) Refuse(path, "descriptor_forms", "set while masks do not include DESCRIPTOR");
  if ((t.descriptor_forms & Bit(ATTNCHECK_FORM_PAGED)) != 0 && t.page_size < 1) {
    Refuse(path, "page_size", fmt::format("{} (the paged form needs a page size of at least 1)", t.page_size));
  }
  if (t.page_size < 0) Refuse(path, "page_size", fmt::format("{} is negative", t.page_size));
  if (t.head_dim_multiple < 0) Refuse(path, "head_dim_multiple", fmt::format("{} is negative", t.head_dim_multiple));
  bool ended = false;
  for (int32_t d : t.head_dims) {
    if (d < 0) Refuse(path, "head_dims", fmt::format("{} is negative", d));
    if (ended && d != 0) Refuse(path, "head_dims", "a value after the terminating 0");
    ended = ended || d == 0;
    if (d != 0 && t.head_dim_multiple > 1 && d % t.head_dim_multiple != 0) {
      Refuse(path, "head_dims", fmt::format("{} is not a multiple of head_dim_multiple {}", d, t.head_dim_multiple));
    }
  }
  const int max_head_dim = t.capabilities.max_head_dim > 0 ? t.capabilities.max_head_dim : Capabilities{}.max_head_dim;
  bool any = false;
  for (int d = 2; d <= max_head_dim && !any; ++d) {
    any = (t.head_dim_multiple <= 1 || d % t.head_dim_multiple == 0) &&
          (t.head_dims[0] == 0 || std::find(std::begin(t.head_dims), std::end(t.head_dims), d) != std::end(t.head_dims));
  }
  if (!any) Refuse(path, "head_dims", fmt::format("no head dim up to max_head_dim {} is taken", max_head_dim));
  if (t.capabilities.has_session != 0 && descriptor && t.session_attend_v2 == nullptr) {
    Refuse(path, "session_attend_v2", "missing while has_session is 1 and masks include DESCRIPTOR");
  }
}

// Every check the harness relies on; the first problem refuses the library.
void Validate(const std::string& path, const attncheck_adapter_v1& t) {
  if (t.abi_version != 1 && t.abi_version != ATTNCHECK_ABI_VERSION) {
    Refuse(path, "abi_version",
           fmt::format("plugin speaks ABI version {}, this attncheck speaks 1 and {} (rebuild it against this "
                       "attncheck's include/attncheck/adapter.h)",
                       t.abi_version, ATTNCHECK_ABI_VERSION));
  }
  const size_t least = IsV2(t) ? sizeof(attncheck_adapter_v1) : ATTNCHECK_ADAPTER_V1_0_SIZE;
  if (t.struct_size < least) {
    Refuse(path, "struct_size", fmt::format("table is {} bytes, version {} needs at least {}", t.struct_size, t.abi_version, least));
  }
  if (t.name == nullptr || t.name[0] == '\0') Refuse(path, "name", "missing");
  if (t.last_error == nullptr) Refuse(path, "last_error", "missing (mandatory function)");
  if (t.attention == nullptr) Refuse(path, "attention", "missing (mandatory function)");
  if (t.destroy != nullptr && t.create == nullptr) Refuse(path, "create", "missing while destroy is given");

  const attncheck_capabilities& c = t.capabilities;
  CheckFlag(path, "owns_rope", c.owns_rope);
  CheckFlag(path, "owns_bias", c.owns_bias);
  CheckFlag(path, "has_rope_stage", c.has_rope_stage);
  CheckFlag(path, "has_session", c.has_session);
  CheckFlag(path, "gqa", c.gqa);
  CheckFlag(path, "softcap", c.softcap);
  CheckFlag(path, "value_dim_differs", c.value_dim_differs);
  if (c.owns_bias != 0) {
    Refuse(path, "capabilities.owns_bias", "must be 0 in ABI 1 (the harness folds score biases into the mask)");
  }
  if (c.has_rope_stage != 0 && t.rope == nullptr) Refuse(path, "rope", "missing while has_rope_stage is 1");
  if (c.has_session != 0) {
    if (t.session_open == nullptr) Refuse(path, "session_open", "missing while has_session is 1");
    if (t.session_append == nullptr) Refuse(path, "session_append", "missing while has_session is 1");
    const bool descriptor_only = IsV2(t) && c.masks == Bit(ATTNCHECK_MASK_DESCRIPTOR);
    if (t.session_attend == nullptr && !descriptor_only) Refuse(path, "session_attend", "missing while has_session is 1");
    if (t.session_close == nullptr) Refuse(path, "session_close", "missing while has_session is 1");
  }
  CheckBits(path, "dtypes", c.dtypes, kDtypeBits, false);
  CheckBits(path, "masks", c.masks, IsV2(t) ? kMaskBits : kMaskBitsV1, false);
  if (c.preferred_mask < 0 || c.preferred_mask > ATTNCHECK_MASK_DESCRIPTOR || (c.masks & Bit(c.preferred_mask)) == 0) {
    Refuse(path, "capabilities.preferred_mask", fmt::format("{} is not one of the declared masks", c.preferred_mask));
  }
  if (c.masked_rows < ATTNCHECK_MASKED_ROWS_ZEROS || c.masked_rows > ATTNCHECK_MASKED_ROWS_MEAN_V) {
    Refuse(path, "capabilities.masked_rows",
           fmt::format("{} is not 0 (zeros), 1 (nan), 2 (unspecified) or 3 (mean-v)", c.masked_rows));
  }
  if (const attncheck_contract* contract = ContractOf(t)) {
    if (contract->blocking != ATTNCHECK_BLOCKING_FILL && contract->blocking != ATTNCHECK_BLOCKING_NEG_INF) {
      Refuse(path, "contract.blocking", fmt::format("{} is not 0 (fill) or 1 (neg-inf)", contract->blocking));
    }
    if (contract->nan_isolation != 0 && contract->nan_isolation != 1) {
      Refuse(path, "contract.nan_isolation", fmt::format("{} is not 0 or 1", contract->nan_isolation));
    }
  }
  CheckBits(path, "encodings", c.encodings, kEncodingBits, false);
  if ((c.encodings & Bit(ATTNCHECK_ENCODING_NONE)) == 0) Refuse(path, "capabilities.encodings", "must include NONE");
  CheckBits(path, "rope_layouts", c.rope_layouts, kLayoutBits, true);
  CheckBits(path, "rope_scalings", c.rope_scalings, kScalingBits, true);
  if (c.owns_rope != 0) {
    if ((c.encodings & kOtherQkEncodings) != 0) {
      Refuse(path, "capabilities.encodings",
             "a plugin that owns RoPE cannot list sinusoidal, learned or xPos in ABI 1 (no spec for them)");
    }
    if ((c.encodings & Bit(ATTNCHECK_ENCODING_ROPE)) != 0 && (c.rope_layouts == 0 || c.rope_scalings == 0)) {
      Refuse(path, c.rope_layouts == 0 ? "capabilities.rope_layouts" : "capabilities.rope_scalings",
             "empty set while the plugin owns RoPE");
    }
  }
  if (c.has_rope_stage != 0 && (c.rope_layouts == 0 || c.rope_scalings == 0)) {
    Refuse(path, "capabilities.rope_layouts", "rope_layouts and rope_scalings must not be empty with has_rope_stage");
  }
  const std::array<std::pair<const char*, int32_t>, 5> limits = {
      {{"max_batch", c.max_batch}, {"max_heads", c.max_heads}, {"max_tokens", c.max_tokens},
       {"max_head_dim", c.max_head_dim}, {"max_position", c.max_position}}};
  for (const auto& [field, value] : limits) {
    if (value < 0) Refuse(path, std::string("capabilities.") + field, fmt::format("{} is negative", value));
  }
  if (c.max_head_dim != 0 && c.max_head_dim < 2) Refuse(path, "capabilities.max_head_dim", "must be at least 2");
  if (IsV2(t)) ValidateV2(path, t);
}

std::shared_ptr<Library> Load(std::string_view path_view) {
  auto library = std::make_shared<Library>();
  library->path = std::string(path_view);
  const std::string& path = library->path;
  if (path.empty()) Refuse("plugin:", "--adapter", "no library path after 'plugin:'");
  // A name without a slash would be searched on the loader's path; the user means a file.
  const std::string open_path = path.find('/') == std::string::npos ? "./" + path : path;
  dlerror();
  library->handle = dlopen(open_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library->handle == nullptr) Refuse(path, "", "cannot load plugin: " + OneLine(dlerror()));
  dlerror();
  void* symbol = dlsym(library->handle, ATTNCHECK_ADAPTER_ENTRY);
  if (symbol == nullptr) {
    Refuse(path, ATTNCHECK_ADAPTER_ENTRY, "not exported (is this an attncheck plugin? see include/attncheck/adapter.h)");
  }
  attncheck_adapter_entry_fn entry = nullptr;
  static_assert(sizeof(entry) == sizeof(symbol));
  std::memcpy(&entry, &symbol, sizeof(entry));
  library->table = entry();
  if (library->table == nullptr) Refuse(path, ATTNCHECK_ADAPTER_ENTRY, "returned no table (NULL)");
  Validate(path, *library->table);
  return library;
}

// ---------------------------------------------------------------------------
// Tensors.

attncheck_tensor Contiguous(const void* data, attncheck_dtype dtype, std::initializer_list<int64_t> shape) {
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
  attncheck_tensor Tensor(std::initializer_list<int64_t> shape) const {
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
  attncheck_tensor Tensor(std::initializer_list<int64_t> shape) {
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

attncheck_rope_spec RopeSpecOf(const Case& c) {
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

// ---------------------------------------------------------------------------

// The instance the plugin's create() made, destroyed with the adapter.
struct Instance {
  std::shared_ptr<Library> library;
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
  if (IsV2(t) && rc == ATTNCHECK_REFUSED) throw CaseRefused(fmt::format("plugin {}: {}(): {}", t.name, call, why));
  throw std::runtime_error(fmt::format("plugin {}: {}() returned {}: {}", t.name, call, rc, why));
}

class PluginSession final : public Session {
 public:
  PluginSession(std::shared_ptr<Instance> instance, const SessionArgs& args)
      : instance_(std::move(instance)), args_(args), dtype_(args.c->dtype) {
    const attncheck_adapter_v1& t = table();
    attncheck_session_args s{};
    s.batch = args.batch;
    s.q_heads = args.q_heads;
    s.kv_heads = args.kv_heads;
    s.head_dim = args.head_dim;
    s.value_dim = args.value_dim;
    s.dtype = static_cast<int32_t>(dtype_);
    s.apply_rope = args.apply_positional ? 1 : 0;
    s.rope = RopeSpecOf(*args.c);
    s.current_length = args.current_length;
    s.scale = args.scale;
    s.softcap = args.c->softcap;
    if (args.apply_bias) throw std::invalid_argument("plugin: score biases are folded by the harness in ABI 1");
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
    const int rc = IsV2(t) && t.session_attend_v2 != nullptr
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
  explicit PluginAdapter(std::shared_ptr<Library> library) : instance_(std::make_shared<Instance>()) {
    instance_->library = std::move(library);
    const attncheck_adapter_v1& t = table();
    if (t.create != nullptr) {
      instance_->handle = t.create();
      if (instance_->handle == nullptr) {
        Refuse(instance_->library->path, "create", "returned NULL: " + OneLine(t.last_error(nullptr)));
      }
    }
    caps_ = ToCapabilities(t.capabilities, ContractOf(t));
    if (IsV2(t)) AddV2Capabilities(t, caps_);
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
    if (a.apply_bias) throw std::invalid_argument("plugin: score biases are folded by the harness in ABI 1");
    const Dtype dtype = a.c->dtype;
    const Input q(a.q, dtype), k(a.k, dtype), v(a.v, dtype);
    const Mask mask(a.mask, dtype, a.batch, a.tq, a.tk);
    const Visibility visibility(a.mask);
    Output out(a.out, dtype);
    attncheck_attention_args args{};
    args.batch = a.batch;
    args.q_heads = a.q_heads;
    args.kv_heads = a.kv_heads;
    args.tq = a.tq;
    args.tk = a.tk;
    args.head_dim = a.head_dim;
    args.value_dim = a.value_dim;
    args.q = q.Tensor({a.batch, a.q_heads, a.tq, a.head_dim});
    args.k = k.Tensor({a.batch, a.kv_heads, a.tk, a.head_dim});
    args.v = v.Tensor({a.batch, a.kv_heads, a.tk, a.value_dim});
    args.query_positions = Contiguous(a.query_positions.data(), ATTNCHECK_DTYPE_I32, {a.batch, a.tq});
    args.key_positions = Contiguous(a.key_positions.data(), ATTNCHECK_DTYPE_I32, {a.batch, a.tk});
    args.mask_convention = static_cast<int32_t>(a.mask.convention);
    args.mask = mask.tensor;
    args.apply_rope = a.apply_positional ? 1 : 0;
    args.rope = RopeSpecOf(*a.c);
    args.current_length = a.current_length;
    args.scale = a.scale;
    args.softcap = a.c->softcap;
    args.out = out.Tensor({a.batch, a.q_heads, a.tq, a.value_dim});
    args.visibility = visibility.get();  // an ABI 1 plugin's args end before it and never read it
    const int rc = table().attention(instance_->handle, &args);
    if (rc != 0) ThrowPluginError(*instance_, "attention", rc);
    out.Finish();
  }

  void rope(const RopeArgs& a) override {
    if (!caps_.has_rope_stage) throw std::logic_error("plugin: rope() called without has_rope_stage");
    const Dtype dtype = a.c->dtype;
    const Input x(a.x, dtype);
    Output out(a.out, dtype);
    attncheck_rope_args args{};
    args.batch = a.batch;
    args.heads = a.heads;
    args.tokens = a.tokens;
    args.head_dim = a.head_dim;
    args.x = x.Tensor({a.batch, a.heads, a.tokens, a.head_dim});
    args.positions = Contiguous(a.positions.data(), ATTNCHECK_DTYPE_I32, {a.batch, a.tokens});
    args.rope = RopeSpecOf(*a.c);
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

  static Capabilities ToCapabilities(const attncheck_capabilities& c, const attncheck_contract* contract) {
    Capabilities caps;
    caps.owns_rope = c.owns_rope != 0;
    caps.owns_bias = false;
    caps.has_rope_stage = c.has_rope_stage != 0;
    caps.has_session = c.has_session != 0;
    caps.dtypes.clear();
    for (Dtype d : kAllDtypes) {
      if ((c.dtypes & Bit(static_cast<int>(d))) != 0) caps.dtypes.push_back(d);
    }
    caps.masks = {static_cast<MaskConvention>(c.preferred_mask)};
    for (MaskConvention m : kAllMaskConventions) {
      if ((c.masks & Bit(static_cast<int>(m))) != 0 && m != caps.masks.front()) caps.masks.push_back(m);
    }
    if ((c.masks & Bit(ATTNCHECK_MASK_DESCRIPTOR)) != 0 &&
        std::find(caps.masks.begin(), caps.masks.end(), MaskConvention::kDescriptor) == caps.masks.end()) {
      caps.masks.push_back(MaskConvention::kDescriptor);
    }
    caps.masked_rows = static_cast<MaskedRowPolicy>(c.masked_rows);
    if (contract != nullptr) {
      caps.blocking = static_cast<Blocking>(contract->blocking);
      caps.nan_isolation = contract->nan_isolation != 0;
    }
    caps.encodings.clear();
    for (EncodingKind e : kAllEncodingKinds) {
      if ((c.encodings & Bit(static_cast<int>(e))) != 0) caps.encodings.push_back(e);
    }
    caps.rope_layouts.clear();
    for (RopeLayout l : kAllRopeLayouts) {
      if ((c.rope_layouts & Bit(static_cast<int>(l))) != 0) caps.rope_layouts.push_back(l);
    }
    caps.rope_scalings.clear();
    for (RopeScaling s : kAllRopeScalings) {
      if ((c.rope_scalings & Bit(static_cast<int>(s))) != 0) caps.rope_scalings.push_back(s);
    }
    caps.gqa = c.gqa != 0;
    caps.softcap = c.softcap != 0;
    caps.value_dim_differs = c.value_dim_differs != 0;
    if (c.max_batch > 0) caps.max_batch = c.max_batch;
    if (c.max_heads > 0) caps.max_heads = c.max_heads;
    if (c.max_tokens > 0) caps.max_tokens = c.max_tokens;
    if (c.max_head_dim > 0) caps.max_head_dim = c.max_head_dim;
    if (c.max_position > 0) caps.max_position = c.max_position;
    return caps;
  }

  static void AddV2Capabilities(const attncheck_adapter_v1& t, Capabilities& caps) {
    const auto form = [&t](attncheck_descriptor_form f) { return (t.descriptor_forms & Bit(f)) != 0; };
    DescriptorForms& forms = caps.descriptor_forms;
    forms.causal_top_left = form(ATTNCHECK_FORM_CAUSAL_TOP_LEFT);
    forms.causal_bottom_right = form(ATTNCHECK_FORM_CAUSAL_BOTTOM_RIGHT);
    forms.window = form(ATTNCHECK_FORM_WINDOW);
    forms.varlen = form(ATTNCHECK_FORM_VARLEN);
    forms.seqused_q = form(ATTNCHECK_FORM_SEQUSED_Q);
    forms.seqused_k = form(ATTNCHECK_FORM_SEQUSED_K);
    forms.leftpad_k = form(ATTNCHECK_FORM_LEFTPAD_K);
    forms.prefix = form(ATTNCHECK_FORM_PREFIX);
    forms.chunk = form(ATTNCHECK_FORM_CHUNK);
    forms.paged = form(ATTNCHECK_FORM_PAGED);
    forms.page_size = forms.paged ? t.page_size : 0;
    forms.alibi = form(ATTNCHECK_FORM_ALIBI);
    forms.alibi_max_bias = form(ATTNCHECK_FORM_ALIBI_MAX_BIAS);
    forms.softcap = form(ATTNCHECK_FORM_SOFTCAP);
    caps.head_dim_multiple = std::max(1, t.head_dim_multiple);
    for (int32_t d : t.head_dims) {
      if (d == 0) break;
      caps.head_dims.push_back(d);
    }
  }

  std::shared_ptr<Instance> instance_;
  Capabilities caps_;
};

}  // namespace
}  // namespace attncheck::adapters

namespace attncheck {

std::unique_ptr<Adapter> MakePluginAdapter(std::string_view path) {
  return std::make_unique<adapters::PluginAdapter>(adapters::Load(path));
}

}  // namespace attncheck
