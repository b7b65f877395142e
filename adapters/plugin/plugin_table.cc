// The plugin's table (plugin_table.h): dlopen(RTLD_NOW | RTLD_LOCAL),
// dlsym("attncheck_adapter_entry"), then every field checked before anything runs
// (ABI 1 read only up to its struct_size; ABI 2 fields only in an ABI 2 table; the
// ABI 2.1 backward only where struct_size covers it).
#include "adapters/plugin/plugin_table.h"

#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <iterator>
#include <vector>

#include <fmt/format.h>

#include "cases/error.h"

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
static_assert(ATTNCHECK_BLOCKING_FILL_ROWS == static_cast<int>(Blocking::kFillRows));

constexpr uint32_t Bit(int n) { return 1u << n; }
constexpr uint32_t kDtypeBits = Bit(ATTNCHECK_DTYPE_F32) | Bit(ATTNCHECK_DTYPE_F16) | Bit(ATTNCHECK_DTYPE_BF16);
constexpr uint32_t kMaskBitsV1 = Bit(8) - 1;
constexpr uint32_t kMaskBits = Bit(ATTNCHECK_MASK_DESCRIPTOR + 1) - 1;
constexpr uint32_t kFormBits = Bit(ATTNCHECK_FORM_VARLEN_BACKWARD + 1) - 1;
constexpr uint32_t kEncodingBits = Bit(9) - 1;
constexpr uint32_t kLayoutBits = Bit(2) - 1;
constexpr uint32_t kScalingBits = Bit(8) - 1;
constexpr int32_t kMaxTile = 1 << 16;  // as the process protocol's tile_sizes
constexpr int32_t kMaxPage = 1 << 16;  // as the process protocol's more_page_sizes
// q/k encodings other than RoPE: a plugin that owns RoPE would have to apply them
// too, and the ABI 1 rope spec does not describe them.
constexpr uint32_t kOtherQkEncodings =
    Bit(ATTNCHECK_ENCODING_SINUSOIDAL) | Bit(ATTNCHECK_ENCODING_LEARNED) | Bit(ATTNCHECK_ENCODING_XPOS);

[[noreturn]] void Refuse(const std::string& path, const std::string& field, const std::string& reason) {
  throw InputError(path, field, reason);
}

void CheckFlag(const std::string& path, const std::string& field, int32_t value) {
  if (value != 0 && value != 1) Refuse(path, field, fmt::format("{} is not 0 or 1", value));
}

// A 0-or-1 field that may be 1 only where the flag it depends on (`needs`, named
// `needs_field`) is 1: backward_lse needs has_backward, session_rope_as_call has_session.
void CheckFlagNeeding(const std::string& path, const std::string& field, int32_t value, int32_t needs,
                      const char* needs_field) {
  CheckFlag(path, field, value);
  if (value != 0 && needs == 0) Refuse(path, field, fmt::format("1 while {} is 0", needs_field));
}

// A table of minor version `minor` either ends where the previous one did (`before`
// bytes) or covers every field the minor version appended (`size` bytes).
void CheckEndsOutside(const std::string& path, const attncheck_adapter_v1& t, const char* previous, size_t before,
                      const char* minor, size_t size, const char* appended) {
  if (t.struct_size > before && t.struct_size < size) {
    Refuse(path, "struct_size",
           fmt::format("table is {} bytes: it ends inside the ABI {} {}; an ABI {} table is {} bytes, a {} table at "
                       "least {}",
                       t.struct_size, minor, appended, previous, before, minor, size));
  }
}

void CheckBits(const std::string& path, const char* field, uint32_t bits, uint32_t known, bool may_be_empty) {
  if ((bits & ~known) != 0) {
    Refuse(path, std::string("capabilities.") + field, fmt::format("unknown bits 0x{:x} (known: 0x{:x})", bits & ~known, known));
  }
  if (bits == 0 && !may_be_empty) Refuse(path, std::string("capabilities.") + field, "empty set");
}

// A 0-terminated array field (head_dims, tile_sizes, more_page_sizes) up to its terminating 0.
template <size_t N>
std::vector<int> UpToZero(const int32_t (&values)[N]) {
  std::vector<int> kept;
  for (int32_t v : values) {
    if (v == 0) break;
    kept.push_back(v);
  }
  return kept;
}

// A 0-terminated array field of lengths (tile_sizes, more_page_sizes): each 1 to `max`,
// nothing after the terminating 0.
template <size_t N>
void CheckZeroTerminated(const std::string& path, const char* field, const int32_t (&values)[N], int32_t max) {
  bool ended = false;
  for (int32_t v : values) {
    if (v < 0 || v > max) Refuse(path, field, fmt::format("{} is outside 1 to {}", v, max));
    if (ended && v != 0) Refuse(path, field, "a value after the terminating 0");
    ended = ended || v == 0;
  }
}

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
  if ((t.descriptor_forms & Bit(ATTNCHECK_FORM_VARLEN_BACKWARD)) != 0 &&
      (t.descriptor_forms & Bit(ATTNCHECK_FORM_VARLEN)) == 0) {
    Refuse(path, "descriptor_forms", "VARLEN_BACKWARD without VARLEN (the backward's varlen layout is the forward's)");
  }
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
  CheckEndsOutside(path, t, "2.0", ATTNCHECK_ADAPTER_V2_0_SIZE, "2.1", ATTNCHECK_ADAPTER_V2_1_SIZE,
                   "fields (has_backward, backward)");
  if (IsAbi21(t)) {
    CheckFlag(path, "has_backward", t.has_backward);
    if (t.has_backward != 0 && t.backward == nullptr) Refuse(path, "backward", "missing while has_backward is 1");
    CheckFlagNeeding(path, "backward_lse", t.backward_lse, t.has_backward, "has_backward");
  }
  CheckEndsOutside(path, t, "2.1", ATTNCHECK_ADAPTER_V2_1_SIZE, "2.2", ATTNCHECK_ADAPTER_V2_2_SIZE,
                   "field backward_saved");
  if (IsAbi22(t)) CheckFlagNeeding(path, "backward_saved", t.backward_saved, t.has_backward, "has_backward");
  CheckEndsOutside(path, t, "2.2", kAdapterV22Sizeof, "2.3", ATTNCHECK_ADAPTER_V2_3_SIZE, "field tile_sizes");
  if (IsAbi23(t)) CheckZeroTerminated(path, "tile_sizes", t.tile_sizes, kMaxTile);
  CheckEndsOutside(path, t, "2.3", kAdapterV23Sizeof, "2.4", ATTNCHECK_ADAPTER_V2_4_SIZE,
                   "field more_page_sizes");
  if (IsAbi24(t)) {
    CheckZeroTerminated(path, "more_page_sizes", t.more_page_sizes, kMaxPage);
    const std::vector<int> sizes = UpToZero(t.more_page_sizes);
    const bool paged = (t.descriptor_forms & Bit(ATTNCHECK_FORM_PAGED)) != 0;
    if (!sizes.empty() && !paged) Refuse(path, "more_page_sizes", "set while descriptor_forms lacks PAGED");
    for (size_t i = 0; i < sizes.size(); ++i) {
      if (sizes[i] == t.page_size) Refuse(path, "more_page_sizes", fmt::format("{} repeats page_size", sizes[i]));
      if (std::find(sizes.begin(), sizes.begin() + i, sizes[i]) != sizes.begin() + i) {
        Refuse(path, "more_page_sizes", fmt::format("{} is listed twice", sizes[i]));
      }
    }
  }
  CheckEndsOutside(path, t, "2.4", kAdapterV24Sizeof, "2.5", ATTNCHECK_ADAPTER_V2_5_SIZE,
                   "fields session_rope_as_call and backward_order_varies");
  if (IsAbi25(t)) {
    CheckFlagNeeding(path, "session_rope_as_call", t.session_rope_as_call, t.capabilities.has_session, "has_session");
    CheckFlagNeeding(path, "backward_order_varies", t.backward_order_varies, t.has_backward, "has_backward");
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
  const size_t least = IsAbi2(t) ? ATTNCHECK_ADAPTER_V2_0_SIZE : ATTNCHECK_ADAPTER_V1_0_SIZE;
  if (t.struct_size < least) {
    Refuse(path, "struct_size", fmt::format("table is {} bytes, version {} needs at least {}", t.struct_size, t.abi_version, least));
  }
  if (t.name == nullptr || t.name[0] == '\0') Refuse(path, "name", "missing");
  if (t.last_error == nullptr) Refuse(path, "last_error", "missing (mandatory function)");
  if (t.attention == nullptr) Refuse(path, "attention", "missing (mandatory function)");
  if (t.destroy != nullptr && t.create == nullptr) Refuse(path, "create", "missing while destroy is given");

  const attncheck_capabilities& c = t.capabilities;
  CheckFlag(path, "capabilities.owns_rope", c.owns_rope);
  CheckFlag(path, "capabilities.owns_bias", c.owns_bias);
  CheckFlag(path, "capabilities.has_rope_stage", c.has_rope_stage);
  CheckFlag(path, "capabilities.has_session", c.has_session);
  CheckFlag(path, "capabilities.gqa", c.gqa);
  CheckFlag(path, "capabilities.softcap", c.softcap);
  CheckFlag(path, "capabilities.value_dim_differs", c.value_dim_differs);
  if (c.has_rope_stage != 0 && t.rope == nullptr) Refuse(path, "rope", "missing while has_rope_stage is 1");
  if (c.has_session != 0) {
    if (t.session_open == nullptr) Refuse(path, "session_open", "missing while has_session is 1");
    if (t.session_append == nullptr) Refuse(path, "session_append", "missing while has_session is 1");
    const bool descriptor_only = IsAbi2(t) && c.masks == Bit(ATTNCHECK_MASK_DESCRIPTOR);
    if (t.session_attend == nullptr && !descriptor_only) Refuse(path, "session_attend", "missing while has_session is 1");
    if (t.session_close == nullptr) Refuse(path, "session_close", "missing while has_session is 1");
  }
  CheckBits(path, "dtypes", c.dtypes, kDtypeBits, false);
  CheckBits(path, "masks", c.masks, IsAbi2(t) ? kMaskBits : kMaskBitsV1, false);
  if (c.preferred_mask < 0 || c.preferred_mask > ATTNCHECK_MASK_DESCRIPTOR || (c.masks & Bit(c.preferred_mask)) == 0) {
    Refuse(path, "capabilities.preferred_mask", fmt::format("{} is not one of the declared masks", c.preferred_mask));
  }
  if (c.masked_rows < ATTNCHECK_MASKED_ROWS_ZEROS || c.masked_rows > ATTNCHECK_MASKED_ROWS_MEAN_V) {
    Refuse(path, "capabilities.masked_rows",
           fmt::format("{} is not 0 (zeros), 1 (nan), 2 (unspecified) or 3 (mean-v)", c.masked_rows));
  }
  if (const attncheck_contract* contract = ContractOf(t)) {
    if (contract->blocking < ATTNCHECK_BLOCKING_FILL || contract->blocking > ATTNCHECK_BLOCKING_FILL_ROWS) {
      Refuse(path, "contract.blocking",
             fmt::format("{} is not 0 (fill), 1 (neg-inf) or 2 (fill-rows)", contract->blocking));
    }
    CheckFlag(path, "contract.nan_isolation", contract->nan_isolation);
    if (t.abi_version >= 2) CheckFlag(path, "contract.queries_beyond_keys", contract->queries_beyond_keys);
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
  if (IsAbi2(t)) ValidateV2(path, t);
  if (c.owns_bias != 0) {
    // The one score bias a C kernel can own is ALiBi, handed over in the descriptor
    // (alibi_slopes or alibi_max_bias); every other bias is folded into a dense mask.
    const uint32_t alibi_forms = Bit(ATTNCHECK_FORM_ALIBI) | Bit(ATTNCHECK_FORM_ALIBI_MAX_BIAS);
    if (!IsAbi2(t) || c.masks != Bit(ATTNCHECK_MASK_DESCRIPTOR) || (t.descriptor_forms & alibi_forms) == 0) {
      Refuse(path, "capabilities.owns_bias",
             "1 needs an ABI 2 table taking only the DESCRIPTOR convention with the ALIBI or ALIBI_MAX_BIAS form "
             "(the harness folds every other score bias into the mask)");
    }
    const uint32_t folded = Bit(ATTNCHECK_ENCODING_T5) | Bit(ATTNCHECK_ENCODING_KERPLE) | Bit(ATTNCHECK_ENCODING_SANDWICH);
    if ((c.encodings & folded) != 0) {
      Refuse(path, "capabilities.encodings", "T5, KERPLE and Sandwich biases need a dense additive mask, "
                                             "which a kernel owning its bias (owns_bias 1) does not take");
    }
  }
}

}  // namespace

PluginLibrary::~PluginLibrary() {
  if (handle != nullptr) dlclose(handle);
}

std::shared_ptr<PluginLibrary> LoadPlugin(std::string_view path_view) {
  auto library = std::make_shared<PluginLibrary>();
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

std::string OneLine(const char* text) {
  std::string line = text == nullptr ? std::string() : std::string(text);
  for (char& ch : line) {
    if (ch == '\n' || ch == '\r') ch = ' ';
  }
  if (line.size() > 400) line = line.substr(0, 400) + "…";
  return line;
}

// The table's contract, or nullptr for an ABI 1.0 table (its struct_size ends before it).
const attncheck_contract* ContractOf(const attncheck_adapter_v1& t) {
  return t.struct_size >= ATTNCHECK_ADAPTER_V1_1_SIZE ? &t.contract : nullptr;
}

namespace {

Capabilities ToCapabilities(const attncheck_capabilities& c, const attncheck_contract* contract) {
  Capabilities caps;
  caps.owns_rope = c.owns_rope != 0;
  caps.owns_bias = c.owns_bias != 0;  // ALiBi from the descriptor only (checked above)
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
  caps.contract_source = ContractSource::kCAbi;
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

void AddAbi2Capabilities(const attncheck_adapter_v1& t, Capabilities& caps) {
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
  forms.varlen_backward = form(ATTNCHECK_FORM_VARLEN_BACKWARD);
  caps.head_dim_multiple = std::max(1, t.head_dim_multiple);
  caps.head_dims = UpToZero(t.head_dims);
}

}  // namespace

Capabilities PluginCapabilities(const attncheck_adapter_v1& t) {
  Capabilities caps = ToCapabilities(t.capabilities, ContractOf(t));
  const attncheck_contract* contract = ContractOf(t);  // queries_beyond_keys: reserved (0) in ABI 1
  caps.queries_beyond_keys = t.abi_version >= 2 && contract != nullptr && contract->queries_beyond_keys != 0;
  if (IsAbi2(t)) AddAbi2Capabilities(t, caps);
  caps.has_backward = IsAbi21(t) && t.has_backward != 0;  // 1.0, 1.1 and 2.0 tables: never
  caps.backward_lse = caps.has_backward && t.backward_lse != 0;
  caps.backward_saved = caps.has_backward && IsAbi22(t) && t.backward_saved != 0;  // 2.1 tables: never
  if (IsAbi23(t)) caps.tile_sizes = UpToZero(t.tile_sizes);  // 2.2 tables and older: none
  if (IsAbi24(t) && caps.descriptor_forms.paged) {             // 2.3 tables and older: page_size alone
    caps.descriptor_forms.more_page_sizes = UpToZero(t.more_page_sizes);
  }
  if (IsAbi25(t)) {  // 2.4 tables and older: neither promise
    caps.session_rope_as_call = t.session_rope_as_call != 0;
    caps.backward_deterministic = t.backward_order_varies == 0;
  }
  return caps;
}

}  // namespace attncheck::adapters
