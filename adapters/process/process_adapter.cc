// The client side of the process protocol (process_adapter.h): an Adapter whose
// calls are messages to a Backend. Requests carry what a kernel is told (the
// call's shapes, flags, dtype, softcap, encoding and weights seed; never the
// case), and — when the backend owns RoPE — the frequencies the harness
// computed, so a backend needs no scaling formulas of its own.
#include "adapters/process/process_adapter.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fmt/format.h>

#include "adapters/library_versions.h"
#include "adapters/packing.h"
#include "adapters/process/backend.h"
#include "adapters/process/descriptor_json.h"
#include "adapters/process/protocol.h"
#include "cases/case_json.h"
#include "cases/error.h"
#include "reference/rope_scaling.h"

namespace attncheck::process {
namespace {

using Shape = std::vector<int64_t>;

template <class E>
nlohmann::json Names(const std::vector<E>& values) {
  nlohmann::json list = nlohmann::json::array();
  for (E v : values) list.push_back(std::string(Name(v)));
  return list;
}

template <class E>
E ParseName(const nlohmann::json& j, std::string_view field, std::optional<E> (*parse)(std::string_view)) {
  if (!j.is_string()) throw ProtocolError(fmt::format("capabilities.{}: expected a string, got {}", field, j.dump()));
  const std::optional<E> value = parse(j.get<std::string>());
  if (!value) throw ProtocolError(fmt::format("capabilities.{}: unknown name '{}'", field, j.get<std::string>()));
  return *value;
}

template <class E>
void ReadNames(const nlohmann::json& caps, const char* field, std::vector<E>& out,
               std::optional<E> (*parse)(std::string_view)) {
  if (!caps.contains(field)) return;
  const nlohmann::json& list = caps[field];
  if (!list.is_array() || list.empty()) {
    throw ProtocolError(fmt::format("capabilities.{}: expected a non-empty array of names", field));
  }
  out.clear();
  for (const nlohmann::json& name : list) out.push_back(ParseName<E>(name, field, parse));
}

void ReadBool(const nlohmann::json& caps, const char* field, bool& out) {
  if (!caps.contains(field)) return;
  if (!caps[field].is_boolean()) throw ProtocolError(fmt::format("capabilities.{}: expected true or false", field));
  out = caps[field].get<bool>();
}

void ReadInt(const nlohmann::json& caps, const char* field, int& out, int lo, int hi) {
  if (!caps.contains(field)) return;
  const nlohmann::json& v = caps[field];
  if (!v.is_number_integer() || v.get<int64_t>() < lo || v.get<int64_t>() > hi) {
    throw ProtocolError(fmt::format("capabilities.{}: expected an integer from {} to {}", field, lo, hi));
  }
  out = v.get<int>();
}

void ReadInts(const nlohmann::json& caps, const char* field, std::vector<int>& out, int lo, int hi) {
  if (!caps.contains(field)) return;
  const nlohmann::json& list = caps[field];
  const std::string expected = fmt::format("capabilities.{}: expected an array of integers from {} to {}", field, lo, hi);
  if (!list.is_array()) throw ProtocolError(expected);
  out.clear();
  for (const nlohmann::json& v : list) {
    if (!v.is_number_integer() || v.get<int64_t>() < lo || v.get<int64_t>() > hi) throw ProtocolError(expected);
    out.push_back(v.get<int>());
  }
}

// ---- request pieces ----

std::vector<int64_t> Dims(std::initializer_list<int> dims) { return {dims.begin(), dims.end()}; }

// The RoPE a backend that owns the positional stage applies: the harness's
// frequencies (every scaling), layout, rotary dim, magnitude, and log-n flag.
nlohmann::json RopeJson(const KernelSpec& c, int current_length) {
  const reference::RopeFrequencies f = reference::Frequencies(c.encoding.rope, c.rotary_dim(), current_length);
  nlohmann::json theta = nlohmann::json::array();
  for (double t : f.theta) theta.push_back(static_cast<double>(static_cast<float>(t)));
  return {{"layout", std::string(Name(c.encoding.rope.layout))},
          {"rotary_dim", c.rotary_dim()},
          {"theta", std::move(theta)},
          {"mscale", static_cast<double>(static_cast<float>(f.mscale))},
          {"log_n", c.encoding.rope.log_n}};
}

// The KernelSpec fields a request carries besides the shapes: `dtype`,
// `softcap`, `encoding` (as a case file writes it) and `weights_seed`.
void AddSpec(const KernelSpec& spec, nlohmann::json& header) {
  header["dtype"] = std::string(Name(spec.dtype));
  header["softcap"] = spec.softcap;
  header["encoding"] = ToJson(spec.encoding);
  header["weights_seed"] = spec.weights_seed;
}

bool SendsRope(const KernelSpec& c, bool apply_positional) { return apply_positional && c.encoding.kind == EncodingKind::kRope; }

// The log-n query factor per query position [B, T] (RoPE with log_n only).
void AddQueryScale(const KernelSpec& c, bool apply_positional, std::span<const int> positions, int batch, int tokens,
                   std::vector<Tensor>& tensors) {
  if (!SendsRope(c, apply_positional) || !c.encoding.rope.log_n) return;
  std::vector<float> scale;
  scale.reserve(positions.size());
  for (int p : positions) scale.push_back(static_cast<float>(reference::LogNScale(p, c.encoding.rope.original_context)));
  tensors.push_back(Tensor::F32("query_scale", Dims({batch, tokens}), scale));
}

// Protocol 2: a descriptor call carries its descriptor in the header.
void AddDescriptor(const MaskArgs& mask, nlohmann::json& header) {
  if (mask.convention != MaskConvention::kDescriptor) return;
  if (mask.descriptor == nullptr) throw std::logic_error("descriptor convention without a descriptor");
  header["descriptor"] = DescriptorToJson(*mask.descriptor);
}

void AddMask(const MaskArgs& mask, int batch, int tq, int tk, std::vector<Tensor>& tensors) {
  if (IsAdditive(mask.convention)) {
    tensors.push_back(Tensor::F32("mask", Dims({batch, tq, tk}), mask.additive));
  } else if (mask.convention == MaskConvention::kBoolVisible || mask.convention == MaskConvention::kBoolBlocked) {
    tensors.push_back(Tensor::U8("mask", Dims({batch, tq, tk}), mask.boolean));
  }
}

void CopyOut(const Message& answer, const Shape& shape, std::span<float> out, std::string_view name = "out") {
  const Tensor& t = answer.Get(std::string(name), TensorDtype::kF32, shape);
  const std::span<const float> values = t.f32();
  std::copy(values.begin(), values.end(), out.begin());
}

// ---- the adapter ----

struct Remote {
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Adapter> local;  // isolated: the in-process twin for unsupported()
  uint64_t next_session = 1;
};

class RemoteSession final : public Session {
 public:
  RemoteSession(std::shared_ptr<Remote> remote, uint64_t id, const SessionArgs& args)
      : remote_(std::move(remote)), id_(id), generation_(remote_->backend->generation()), args_(args) {}
  ~RemoteSession() override {
    if (!Alive()) return;
    try {
      remote_->backend->Call({{"op", "session_close"}, {"session", id_}}, {}, "ok");
    } catch (...) {  // closing is best effort; the next call reports a dead backend
    }
  }

  void append(std::span<const float> k, std::span<const float> v, std::span<const int> positions, int n) override {
    CheckAlive();
    std::vector<Tensor> tensors;
    tensors.push_back(Tensor::F32("k", Dims({args_.batch, args_.kv_heads, n, args_.head_dim}), k));
    tensors.push_back(Tensor::F32("v", Dims({args_.batch, args_.kv_heads, n, args_.value_dim}), v));
    tensors.push_back(Tensor::I32("positions", Dims({args_.batch, n}), positions));
    remote_->backend->Call({{"op", "session_append"}, {"session", id_}, {"n", n}}, tensors, "ok");
    length_ += n;
  }

  void attend(std::span<const float> q, std::span<const int> positions, int tq, const MaskArgs& mask,
              std::span<float> out) override {
    CheckAlive();
    std::vector<Tensor> tensors;
    tensors.push_back(Tensor::F32("q", Dims({args_.batch, args_.q_heads, tq, args_.head_dim}), q));
    tensors.push_back(Tensor::I32("positions", Dims({args_.batch, tq}), positions));
    AddMask(mask, args_.batch, tq, length_, tensors);
    AddQueryScale(args_.spec, args_.apply_positional, positions, args_.batch, tq, tensors);
    nlohmann::json header = {{"op", "session_attend"},
                             {"session", id_},
                             {"tq", tq},
                             {"tk", length_},
                             {"mask_convention", std::string(Name(mask.convention))}};
    AddDescriptor(mask, header);
    const Message answer = remote_->backend->Call(std::move(header), tensors, "result");
    CopyOut(answer, Dims({args_.batch, args_.q_heads, tq, args_.value_dim}), out);
  }

 private:
  bool Alive() const { return remote_->backend->running() && remote_->backend->generation() == generation_; }
  void CheckAlive() const {
    if (!Alive()) {
      throw AdapterError(AdapterFault::kCrash, "backend process was restarted; the session is gone");
    }
  }

  std::shared_ptr<Remote> remote_;
  uint64_t id_;
  uint64_t generation_;
  SessionArgs args_;
  int length_ = 0;
};

// What an attention call or a session is told of the stages and the spec.
void AddStages(const KernelSpec& c, bool apply_positional, bool apply_bias, double scale, int current_length,
               nlohmann::json& header) {
  header["apply_positional"] = apply_positional;
  header["apply_bias"] = apply_bias;
  header["scale"] = scale;
  header["current_length"] = current_length;
  AddSpec(c, header);
  if (SendsRope(c, apply_positional)) header["rope"] = RopeJson(c, current_length);
}

// The header and tensors of one attention call (the `attention` and `backward` requests).
nlohmann::json CallHeader(std::string_view op, const AttentionArgs& a, std::vector<Tensor>& tensors) {
  const KernelSpec& c = a.spec;
  nlohmann::json header = {{"op", std::string(op)},
                           {"batch", a.batch},
                           {"q_heads", a.q_heads},
                           {"kv_heads", a.kv_heads},
                           {"tq", a.tq},
                           {"tk", a.tk},
                           {"head_dim", a.head_dim},
                           {"value_dim", a.value_dim},
                           {"mask_convention", std::string(Name(a.mask.convention))}};
  AddStages(c, a.apply_positional, a.apply_bias, a.scale, a.current_length, header);
  AddDescriptor(a.mask, header);
  tensors.push_back(Tensor::F32("q", Dims({a.batch, a.q_heads, a.tq, a.head_dim}), a.q));
  tensors.push_back(Tensor::F32("k", KvShape(a, a.head_dim), a.k));  // the pages when paged
  tensors.push_back(Tensor::F32("v", KvShape(a, a.value_dim), a.v));
  tensors.push_back(Tensor::I32("query_positions", Dims({a.batch, a.tq}), a.query_positions));
  tensors.push_back(Tensor::I32("key_positions", Dims({a.batch, a.tk}), a.key_positions));
  AddMask(a.mask, a.batch, a.tq, a.tk, tensors);
  AddQueryScale(c, a.apply_positional, a.query_positions, a.batch, a.tq, tensors);
  return header;
}

class RemoteAdapter final : public Adapter {
 public:
  RemoteAdapter(std::string name, std::string description, Capabilities caps, std::shared_ptr<Remote> remote)
      : name_(std::move(name)), description_(std::move(description)), caps_(std::move(caps)),
        remote_(std::move(remote)) {}

  std::string name() const override { return name_; }
  std::string description() const override { return description_; }
  Capabilities capabilities() const override { return caps_; }
  std::optional<std::string> unsupported(const Case& c) const override {
    return remote_->local ? remote_->local->unsupported(c) : std::nullopt;
  }

  void attention(const AttentionArgs& a) override {
    std::vector<Tensor> tensors;
    const Message answer = remote_->backend->Call(CallHeader("attention", a, tensors), tensors, "result");
    CopyOut(answer, Dims({a.batch, a.q_heads, a.tq, a.value_dim}), a.out);
  }

  // The forward's request with "dout" [B, Hq, Tq, Dv] (and the saved forward "out"
  // [B, Hq, Tq, Dv] and "lse" [B, Hq, Tq] where the backend declared backward_saved);
  // the answer's "dq", "dk", "dv" (and "lse" [B, Hq, Tq] where it declared backward_lse).
  void backward(const BackwardArgs& b) override {
    const AttentionArgs& a = b.forward;
    std::vector<Tensor> tensors;
    nlohmann::json header = CallHeader("backward", a, tensors);
    tensors.push_back(Tensor::F32("dout", Dims({a.batch, a.q_heads, a.tq, a.value_dim}), b.dout));
    if (capabilities().backward_saved) {  // declared: sent even empty (a varlen call with no query)
      tensors.push_back(Tensor::F32("out", Dims({a.batch, a.q_heads, a.tq, a.value_dim}), b.saved_out));
      tensors.push_back(Tensor::F32("lse", Dims({a.batch, a.q_heads, a.tq}), b.saved_lse));
    }
    const Message answer = remote_->backend->Call(std::move(header), tensors, "result");
    CopyOut(answer, Dims({a.batch, a.q_heads, a.tq, a.head_dim}), b.dq, "dq");
    CopyOut(answer, KvShape(a, a.head_dim), b.dk, "dk");
    CopyOut(answer, KvShape(a, a.value_dim), b.dv, "dv");
    if (!b.lse.empty()) CopyOut(answer, Dims({a.batch, a.q_heads, a.tq}), b.lse, "lse");  // backward_lse
  }

  void rope(const RopeArgs& a) override {
    const KernelSpec& c = a.spec;
    nlohmann::json header = {{"op", "rope"},     {"batch", a.batch},       {"heads", a.heads},
                             {"tokens", a.tokens}, {"head_dim", a.head_dim}, {"current_length", a.current_length}};
    AddSpec(c, header);
    if (c.encoding.kind == EncodingKind::kRope) header["rope"] = RopeJson(c, a.current_length);
    std::vector<Tensor> tensors;
    tensors.push_back(Tensor::F32("x", Dims({a.batch, a.heads, a.tokens, a.head_dim}), a.x));
    tensors.push_back(Tensor::I32("positions", Dims({a.batch, a.tokens}), a.positions));
    const Message answer = remote_->backend->Call(std::move(header), tensors, "result");
    CopyOut(answer, Dims({a.batch, a.heads, a.tokens, a.head_dim}), a.out);
  }

  std::unique_ptr<Session> open_session(const SessionArgs& a) override {
    const KernelSpec& c = a.spec;
    const uint64_t id = remote_->next_session++;
    nlohmann::json header = {{"op", "session_open"},
                             {"session", id},
                             {"batch", a.batch},
                             {"q_heads", a.q_heads},
                             {"kv_heads", a.kv_heads},
                             {"head_dim", a.head_dim},
                             {"value_dim", a.value_dim}};
    AddStages(c, a.apply_positional, a.apply_bias, a.scale, a.current_length, header);
    remote_->backend->Call(std::move(header), {}, "ok");
    return std::make_unique<RemoteSession>(remote_, id, a);
  }

 private:
  std::string name_, description_;
  Capabilities caps_;
  std::shared_ptr<Remote> remote_;
};

[[noreturn]] void ExecShell(const std::string& command, int fd) {
  if (dup2(fd, STDIN_FILENO) < 0 || dup2(fd, STDOUT_FILENO) < 0) _exit(127);
  execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
  _exit(127);
}

}  // namespace

std::chrono::milliseconds CallTimeout() {
  const char* text = std::getenv("ATTNCHECK_CALL_TIMEOUT");
  if (text == nullptr || *text == '\0') return std::chrono::milliseconds(10000);
  char* end = nullptr;
  const double seconds = std::strtod(text, &end);
  if (end == text || *end != '\0' || !(seconds > 0.0) || seconds > 86400.0) {
    throw InputError::Option("ATTNCHECK_CALL_TIMEOUT", fmt::format("expected seconds > 0 (at most 86400), got '{}'", text));
  }
  return std::chrono::milliseconds(std::max<int64_t>(1, static_cast<int64_t>(seconds * 1000.0)));
}

// capabilities.accuracy (cases/accuracy.h): every key optional, the default the strict case.
nlohmann::json AccuracyToJson(const Accuracy& a) {
  return {{"score_accum", std::string(Name(a.score_accum))},
          {"pv_accum", std::string(Name(a.pv_accum))},
          {"scores_in_input_dtype", a.scores_in_input_dtype},
          {"p_in_input_dtype", a.p_in_input_dtype}};
}

Accuracy AccuracyFromJson(const nlohmann::json& j) {
  if (!j.is_object()) throw ProtocolError("capabilities.accuracy: expected a JSON object");
  Accuracy a;
  const auto dtype = [&j](const char* field, Dtype& out) {
    if (j.contains(field)) out = ParseName<Dtype>(j[field], fmt::format("accuracy.{}", field), &ParseDtype);
  };
  const auto flag = [&j](const char* field, bool& out) {
    if (!j.contains(field)) return;
    if (!j[field].is_boolean()) throw ProtocolError(fmt::format("capabilities.accuracy.{}: expected true or false", field));
    out = j[field].get<bool>();
  };
  dtype("score_accum", a.score_accum);
  dtype("pv_accum", a.pv_accum);
  flag("scores_in_input_dtype", a.scores_in_input_dtype);
  flag("p_in_input_dtype", a.p_in_input_dtype);
  return a;
}

// capabilities.size_tier (cases/capabilities.h): every key optional; percent 0 = no tier.
nlohmann::json SizeTierToJson(const SizeTier& t) {
  return {{"percent", t.percent},       {"max_tokens", t.max_tokens}, {"max_query_len", t.max_query_len},
          {"max_head_dim", t.max_head_dim}, {"max_heads", t.max_heads}, {"max_batch", t.max_batch}};
}

SizeTier SizeTierFromJson(const nlohmann::json& j) {
  if (!j.is_object()) throw ProtocolError("capabilities.size_tier: expected a JSON object");
  SizeTier t;
  ReadInt(j, "percent", t.percent, 0, 100);
  ReadInt(j, "max_tokens", t.max_tokens, 1, 1 << 16);
  ReadInt(j, "max_query_len", t.max_query_len, 1, 1 << 16);
  ReadInt(j, "max_head_dim", t.max_head_dim, 2, 4096);
  ReadInt(j, "max_heads", t.max_heads, 1, 256);
  ReadInt(j, "max_batch", t.max_batch, 1, 64);
  return t;
}

// capabilities.descriptor_forms: the names of the forms a descriptor kernel takes
// (the fields of DescriptorForms), page_size apart.
struct FormName {
  const char* name;
  bool DescriptorForms::*form;
};
constexpr FormName kFormNames[] = {
    {"causal_top_left", &DescriptorForms::causal_top_left}, {"causal_bottom_right", &DescriptorForms::causal_bottom_right},
    {"window", &DescriptorForms::window},                   {"varlen", &DescriptorForms::varlen},
    {"seqused_q", &DescriptorForms::seqused_q},             {"seqused_k", &DescriptorForms::seqused_k},
    {"leftpad_k", &DescriptorForms::leftpad_k},             {"prefix", &DescriptorForms::prefix},
    {"chunk", &DescriptorForms::chunk},                     {"paged", &DescriptorForms::paged},
    {"alibi", &DescriptorForms::alibi},                     {"alibi_max_bias", &DescriptorForms::alibi_max_bias},
    {"softcap", &DescriptorForms::softcap},                 {"varlen_backward", &DescriptorForms::varlen_backward}};

nlohmann::json FormsToJson(const DescriptorForms& forms) {
  nlohmann::json names = nlohmann::json::array();
  for (const FormName& f : kFormNames) {
    if (forms.*f.form) names.push_back(f.name);
  }
  return names;
}

DescriptorForms FormsFromJson(const nlohmann::json& j) {
  if (!j.is_array()) throw ProtocolError("capabilities.descriptor_forms: expected an array of names");
  DescriptorForms forms;
  for (const nlohmann::json& name : j) {
    const FormName* found = nullptr;
    for (const FormName& f : kFormNames) {
      if (name.is_string() && name.get<std::string>() == f.name) found = &f;
    }
    if (found == nullptr) throw ProtocolError(fmt::format("capabilities.descriptor_forms: unknown form {}", name.dump()));
    forms.*found->form = true;
  }
  return forms;
}

// pad_query_rows' default: the rows past seqused_q follow masked_rows.
const std::string kAsMaskedRows = "as-masked-rows";

nlohmann::json CapabilitiesToJson(const Capabilities& caps) {
  return {{"owns_rope", caps.owns_rope},
          {"owns_bias", caps.owns_bias},
          {"has_rope_stage", caps.has_rope_stage},
          {"has_session", caps.has_session},
          {"session_rope_as_call", caps.session_rope_as_call},
          {"has_backward", caps.has_backward},
          {"backward_lse", caps.backward_lse},
          {"backward_deterministic", caps.backward_deterministic},
          {"backward_saved", caps.backward_saved},
          {"dtypes", Names(caps.dtypes)},
          {"masks", Names(caps.masks)},
          {"descriptor_forms", FormsToJson(caps.descriptor_forms)},
          {"page_size", caps.descriptor_forms.page_size},
          {"more_page_sizes", caps.descriptor_forms.more_page_sizes},
          {"masked_rows", std::string(Name(caps.masked_rows))},
          {"pad_query_rows", caps.pad_query_rows ? std::string(Name(*caps.pad_query_rows)) : kAsMaskedRows},
          {"blocking", std::string(Name(caps.blocking))},
          {"nan_isolation", caps.nan_isolation},
          {"encodings", Names(caps.encodings)},
          {"rope_layouts", Names(caps.rope_layouts)},
          {"rope_scalings", Names(caps.rope_scalings)},
          {"gqa", caps.gqa},
          {"softcap", caps.softcap},
          {"value_dim_differs", caps.value_dim_differs},
          {"queries_beyond_keys", caps.queries_beyond_keys},
          {"scale_argument", caps.scale_argument},
          {"rope_log_n", caps.rope_log_n},
          {"max_batch", caps.max_batch},
          {"max_heads", caps.max_heads},
          {"max_tokens", caps.max_tokens},
          {"max_head_dim", caps.max_head_dim},
          {"head_dim_multiple", caps.head_dim_multiple},
          {"head_dims", caps.head_dims},
          {"tile_sizes", caps.tile_sizes},
          {"max_position", caps.max_position},
          {"size_tier", SizeTierToJson(caps.size_tier)},
          {"accuracy", AccuracyToJson(caps.accuracy)}};
}

Capabilities CapabilitiesFromJson(const nlohmann::json& j) {
  if (!j.is_object()) throw ProtocolError("capabilities: expected a JSON object");
  Capabilities caps;
  ReadBool(j, "owns_rope", caps.owns_rope);
  ReadBool(j, "owns_bias", caps.owns_bias);
  ReadBool(j, "has_rope_stage", caps.has_rope_stage);
  ReadBool(j, "has_session", caps.has_session);
  ReadBool(j, "session_rope_as_call", caps.session_rope_as_call);
  ReadBool(j, "has_backward", caps.has_backward);
  ReadBool(j, "backward_lse", caps.backward_lse);
  ReadBool(j, "backward_deterministic", caps.backward_deterministic);
  ReadBool(j, "backward_saved", caps.backward_saved);
  ReadNames(j, "dtypes", caps.dtypes, &ParseDtype);
  ReadNames(j, "masks", caps.masks, &ParseMaskConvention);
  if (j.contains("descriptor_forms")) caps.descriptor_forms = FormsFromJson(j["descriptor_forms"]);
  ReadInt(j, "page_size", caps.descriptor_forms.page_size, 0, 1 << 16);
  ReadInts(j, "more_page_sizes", caps.descriptor_forms.more_page_sizes, 1, 1 << 16);
  if (j.contains("masked_rows")) {
    caps.masked_rows = ParseName<MaskedRowPolicy>(j["masked_rows"], "masked_rows", &MaskedRowPolicyFromName);
  }
  if (j.contains("pad_query_rows")) {
    if (j["pad_query_rows"] == kAsMaskedRows) {
      caps.pad_query_rows.reset();
    } else {
      caps.pad_query_rows =
          ParseName<MaskedRowPolicy>(j["pad_query_rows"], "pad_query_rows", &MaskedRowPolicyFromName);
    }
  }
  if (j.contains("blocking")) caps.blocking = ParseName<Blocking>(j["blocking"], "blocking", &BlockingFromName);
  ReadBool(j, "nan_isolation", caps.nan_isolation);
  ReadNames(j, "encodings", caps.encodings, &ParseEncodingKind);
  ReadNames(j, "rope_layouts", caps.rope_layouts, &ParseRopeLayout);
  ReadNames(j, "rope_scalings", caps.rope_scalings, &ParseRopeScaling);
  ReadBool(j, "gqa", caps.gqa);
  ReadBool(j, "softcap", caps.softcap);
  ReadBool(j, "value_dim_differs", caps.value_dim_differs);
  ReadBool(j, "queries_beyond_keys", caps.queries_beyond_keys);
  ReadBool(j, "scale_argument", caps.scale_argument);
  ReadBool(j, "rope_log_n", caps.rope_log_n);
  ReadInt(j, "max_batch", caps.max_batch, 1, 64);
  ReadInt(j, "max_heads", caps.max_heads, 1, 256);
  ReadInt(j, "max_tokens", caps.max_tokens, 1, 1 << 16);
  ReadInt(j, "max_head_dim", caps.max_head_dim, 2, 4096);
  ReadInt(j, "max_position", caps.max_position, 1, 1 << 30);
  ReadInt(j, "head_dim_multiple", caps.head_dim_multiple, 0, 4096);
  ReadInts(j, "head_dims", caps.head_dims, 1, 4096);
  ReadInts(j, "tile_sizes", caps.tile_sizes, 1, 1 << 16);
  if (j.contains("size_tier")) caps.size_tier = SizeTierFromJson(j["size_tier"]);
  if (j.contains("accuracy")) caps.accuracy = AccuracyFromJson(j["accuracy"]);
  return caps;
}

std::unique_ptr<Adapter> MakeExecAdapter(std::string_view command, std::string name,
                                         std::chrono::milliseconds min_call_timeout) {
  if (name.empty()) name = "exec:" + std::string(command);
  if (command.empty()) throw InputError::Option("--adapter", "exec: needs a command (exec:COMMAND)");
  auto remote = std::make_shared<Remote>();
  remote->backend = std::make_unique<Backend>(
      name, [command = std::string(command)](int fd) { ExecShell(command, fd); },
      std::max(CallTimeout(), min_call_timeout));
  Capabilities caps;
  std::string description;
  try {
    const nlohmann::json& hello = remote->backend->Hello();
    if (!hello.contains("capabilities")) throw ProtocolError("hello answer has no 'capabilities'");
    caps = CapabilitiesFromJson(hello["capabilities"]);
    caps.contract_source = ContractSource::kProtocol;
    if (hello["protocol"] == 1 && std::find(caps.masks.begin(), caps.masks.end(), MaskConvention::kDescriptor) != caps.masks.end()) {
      throw ProtocolError("capabilities.masks: 'descriptor' needs protocol 2");
    }
    description = hello.value("description", std::string("process backend"));
    if (hello.contains("name") && hello["name"].is_string()) {
      description = hello["name"].get<std::string>() + ": " + description;
    }
    if (hello.contains("versions") && hello["versions"].is_object()) {
      for (const auto& [library, version] : hello["versions"].items()) {
        if (version.is_string()) NoteLibraryVersion(library, version.get<std::string>());
      }
    }
  } catch (const AdapterError& e) {
    throw InputError::Option("--adapter", fmt::format("backend did not complete the handshake: {}", e.what()));
  }
  return std::make_unique<RemoteAdapter>(name, description, caps, std::move(remote));
}

std::unique_ptr<Adapter> MakeIsolatedAdapter(std::unique_ptr<Adapter> inner, std::string name, ServeOptions options) {
  auto remote = std::make_shared<Remote>();
  Adapter* served = inner.get();
  remote->backend = std::make_unique<Backend>(
      name, [served, options](int fd) { _exit(ServeAdapter(*served, fd, fd, options)); }, CallTimeout());
  const Capabilities caps = inner->capabilities();  // protocol 2 sends the child descriptors too
  const std::string description = inner->description() + " (isolated in a child process)";
  remote->local = std::move(inner);  // outlives the backend's children: they hold a copy
  return std::make_unique<RemoteAdapter>(std::move(name), description, caps, std::move(remote));
}

}  // namespace attncheck::process
