// The server side of the process protocol over an in-tree Adapter
// (process_adapter.h ServeAdapter): what an isolated child runs. Each request is
// decoded back into the Adapter call it stands for; an exception answers
// {"op": "error"}; a crash ends the child, which the parent reports.
#include <fmt/format.h>

#include <bit>
#include <climits>
#include <cstring>
#include <map>
#include <memory>
#include <stdexcept>
#include <type_traits>

#include "adapters/packing.h"
#include "adapters/process/descriptor_json.h"
#include "adapters/process/process_adapter.h"
#include "adapters/process/protocol.h"
#include "cases/case_json.h"

namespace attncheck::process {
namespace {

using Shape = std::vector<int64_t>;

// ---- guard margins in the child ---------------------------------------------
// The adapter reads and writes copies inside NaN-filled margins, as in the
// harness (adapters/harness.cc): a write outside a buffer, a change to an input
// or an unwritten output element is answered {"op": "error", "kind": "contract"}
// and stays a law failure (memory safety) instead of vanishing into the child.

constexpr size_t kMargin = 64;
constexpr uint32_t kGuardFloatBits = 0x7FA5A5A5u;     // signalling NaN
constexpr uint32_t kSentinelFloatBits = 0x7FDEAD5Eu;  // quiet NaN: "never written"

class ContractViolation : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class GuardedBuffer {
 public:
  virtual ~GuardedBuffer() = default;
  virtual void Check(std::vector<std::string>& faults) const = 0;
};

template <class T>
class Guarded final : public GuardedBuffer {
 public:
  // An input copy of `values` (output = false) or an output of values.size()
  // elements pre-filled with the sentinel (output = true, T = float).
  Guarded(std::string name, std::span<const T> values, bool output)
      : name_(std::move(name)), output_(output), original_(values.begin(), values.end()),
        storage_(values.size() + 2 * kMargin) {
    for (size_t i = 0; i < kMargin; ++i) {
      storage_[i] = Guard();
      storage_[kMargin + values.size() + i] = Guard();
    }
    for (size_t i = 0; i < values.size(); ++i) {
      if (output) {
        std::memcpy(&storage_[kMargin + i], &kSentinelFloatBits, sizeof(T));
      } else {
        storage_[kMargin + i] = values[i];
      }
    }
  }
  std::span<T> body() { return {storage_.data() + kMargin, original_.size()}; }

  void Check(std::vector<std::string>& faults) const override {
    const size_t n = original_.size();
    size_t before = 0, after = 0;
    const T guard = Guard();
    for (size_t i = 0; i < kMargin; ++i) {
      before += std::memcmp(&storage_[i], &guard, sizeof(T)) != 0;
      after += std::memcmp(&storage_[kMargin + n + i], &guard, sizeof(T)) != 0;
    }
    if (before + after > 0) {
      faults.push_back(fmt::format("adapter wrote outside {} ({} elements before, {} after)",
                                   output_ ? std::string("its output") : "input " + name_, before, after));
    }
    size_t changed = 0;
    for (size_t i = 0; i < n; ++i) {
      if (output_) {
        changed += std::memcmp(&storage_[kMargin + i], &kSentinelFloatBits, sizeof(T)) == 0;
      } else {
        changed += std::memcmp(&storage_[kMargin + i], &original_[i], sizeof(T)) != 0;
      }
    }
    if (changed > 0) {
      faults.push_back(output_ ? fmt::format("adapter left {} output elements unwritten", changed)
                               : fmt::format("adapter modified input {}", name_));
    }
  }

 private:
  static T Guard() {
    if constexpr (std::is_same_v<T, float>) {
      return std::bit_cast<float>(kGuardFloatBits);
    } else if constexpr (std::is_same_v<T, int>) {
      return INT_MIN;
    } else {
      return static_cast<T>(0xA5);
    }
  }

  std::string name_;
  bool output_;
  std::vector<T> original_;
  std::vector<T> storage_;
};

// The guarded buffers of one request.
class Guards {
 public:
  template <class T>
  std::span<const T> In(std::string name, std::span<const T> values) {
    auto buffer = std::make_unique<Guarded<T>>(std::move(name), values, false);
    const std::span<T> body = buffer->body();
    buffers_.push_back(std::move(buffer));
    return body;
  }
  std::span<float> Out(size_t n, std::string name = "out") {
    const std::vector<float> zeros(n);
    auto buffer = std::make_unique<Guarded<float>>(std::move(name), std::span<const float>(zeros), true);
    const std::span<float> body = buffer->body();
    buffers_.push_back(std::move(buffer));
    return body;
  }
  // Throws ContractViolation naming every broken buffer.
  void Check() const {
    std::vector<std::string> faults;
    for (const auto& b : buffers_) b->Check(faults);
    if (faults.empty()) return;
    std::string text;
    for (const std::string& f : faults) text += (text.empty() ? "" : "; ") + f;
    throw ContractViolation(text);
  }

 private:
  std::vector<std::unique_ptr<GuardedBuffer>> buffers_;
};


int Int(const nlohmann::json& h, const char* field) {
  if (!h.contains(field) || !h[field].is_number_integer()) {
    throw ProtocolError(fmt::format("request field '{}' is missing or not an integer", field));
  }
  const int64_t v = h[field].get<int64_t>();
  if (v < 0 || v > (1 << 24)) throw ProtocolError(fmt::format("request field '{}' = {} is out of range", field, v));
  return static_cast<int>(v);
}

bool Bool(const nlohmann::json& h, const char* field) {
  if (!h.contains(field) || !h[field].is_boolean()) {
    throw ProtocolError(fmt::format("request field '{}' is missing or not a boolean", field));
  }
  return h[field].get<bool>();
}

double Number(const nlohmann::json& h, const char* field) {
  if (!h.contains(field) || !h[field].is_number()) {
    throw ProtocolError(fmt::format("request field '{}' is missing or not a number", field));
  }
  return h[field].get<double>();
}

MaskConvention Convention(const nlohmann::json& h) {
  if (!h.contains("mask_convention") || !h["mask_convention"].is_string()) {
    throw ProtocolError("request field 'mask_convention' is missing or not a string");
  }
  const std::optional<MaskConvention> m = ParseMaskConvention(h["mask_convention"].get<std::string>());
  if (!m) throw ProtocolError(fmt::format("unknown mask convention '{}'", h["mask_convention"].get<std::string>()));
  return *m;
}

// The KernelSpec a request carries (process_adapter.cc AddSpec): `dtype`,
// `softcap`, `encoding`, `weights_seed`, and the heads and dims of the call.
KernelSpec RequestSpec(const nlohmann::json& h, int q_heads, int kv_heads, int head_dim, int value_dim) {
  if (!h.contains("dtype") || !h["dtype"].is_string() || !ParseDtype(h["dtype"].get<std::string>())) {
    throw ProtocolError("request field 'dtype' is missing or not a dtype name");
  }
  if (!h.contains("encoding")) throw ProtocolError("request has no 'encoding'");
  if (!h.contains("weights_seed") || !h["weights_seed"].is_number_unsigned()) {
    throw ProtocolError("request field 'weights_seed' is missing or not an unsigned integer");
  }
  KernelSpec spec;
  spec.dtype = *ParseDtype(h["dtype"].get<std::string>());
  spec.softcap = Number(h, "softcap");
  spec.encoding = EncodingSpecFromJson(h["encoding"], "request");
  spec.weights_seed = h["weights_seed"].get<uint64_t>();
  spec.q_heads = q_heads;
  spec.kv_heads = kv_heads;
  spec.head_dim = head_dim;
  spec.value_dim = value_dim;
  return spec;
}

// The mask tensor of a request, as MaskArgs viewing the message.
MaskArgs Mask(const Message& m, MaskConvention convention, int batch, int tq, int tk, Guards& guards) {
  MaskArgs mask;
  mask.convention = convention;
  const Shape shape{batch, tq, tk};
  if (IsAdditive(convention)) {
    mask.additive = guards.In("mask", m.Get("mask", TensorDtype::kF32, shape).f32());
  } else if (convention == MaskConvention::kBoolVisible || convention == MaskConvention::kBoolBlocked) {
    mask.boolean = guards.In("mask", m.Get("mask", TensorDtype::kU8, shape).u8());
  }
  return mask;
}

// Protocol 2: a descriptor call's descriptor (header "descriptor"), kept in `storage`.
void AttachDescriptor(const nlohmann::json& h, MaskArgs& mask, VisibilityDescriptor& storage, int batch, int tq,
                      int tk) {
  if (mask.convention != MaskConvention::kDescriptor) return;
  if (!h.contains("descriptor")) throw ProtocolError("a 'descriptor' call has no 'descriptor' object");
  storage = DescriptorFromJson(h["descriptor"], batch, tq, tk);
  mask.descriptor = &storage;
}

std::span<const int> Ints(const Message& m, const char* name, const Shape& shape, Guards& guards) {
  const std::span<const int32_t> values = m.Get(name, TensorDtype::kI32, shape).i32();
  return guards.In(name, std::span<const int>(reinterpret_cast<const int*>(values.data()), values.size()));
}

std::span<const float> Floats(const Message& m, const char* name, const Shape& shape, Guards& guards) {
  return guards.In(name, m.Get(name, TensorDtype::kF32, shape).f32());
}

struct OpenSession {
  SessionArgs args;
  std::unique_ptr<Session> session;
  int length = 0;
};

class Server {
 public:
  Server(Adapter& adapter, ServeOptions options) : adapter_(adapter), options_(options) {}

  // The answer to one request; false when the loop should end (shutdown).
  bool Handle(const Message& m, std::vector<uint8_t>& answer) {
    const std::string op = m.op();
    if (op == "shutdown") return false;
    nlohmann::json header = {{"op", "ok"}};
    std::vector<Tensor> tensors;
    if (op == "hello") {
      header = {{"op", "hello"},
                {"protocol", kProtocolVersion},
                {"name", adapter_.name()},
                {"description", adapter_.description()},
                {"capabilities", CapabilitiesToJson(adapter_.capabilities())}};
    } else if (op == "attention") {
      header["op"] = "result";
      tensors.push_back(Attention(m));
    } else if (op == "backward") {
      header["op"] = "result";
      Backward(m, tensors);
    } else if (op == "rope") {
      header["op"] = "result";
      tensors.push_back(Rope(m));
    } else if (op == "session_open") {
      SessionOpen(m);
    } else if (op == "session_append") {
      SessionAppend(m);
    } else if (op == "session_attend") {
      header["op"] = "result";
      tensors.push_back(SessionAttend(m));
    } else if (op == "session_close") {
      sessions_.erase(SessionId(m));
    } else {
      throw ProtocolError(fmt::format("unknown op '{}'", op));
    }
    answer = EncodeMessage(std::move(header), tensors);
    return true;
  }

 private:
  // An output tensor [shape] from the adapter's buffer (a wrong shape when the
  // fault-injection option asks: attention calls with odd Tq only).
  Tensor Output(Shape shape, const std::vector<float>& out, bool wrong_shape = false) {
    if (!wrong_shape) return Tensor::F32("out", std::move(shape), out);
    shape.back() += 1;  // one more value per row, consistently framed
    size_t n = 1;
    for (int64_t d : shape) n *= static_cast<size_t>(d);
    std::vector<float> longer = out;
    longer.resize(n, 0.0f);
    return Tensor::F32("out", std::move(shape), longer);
  }

  // The request's forward arguments (attention and backward), guarded in `guards`.
  AttentionArgs Arguments(const Message& m, Guards& guards, VisibilityDescriptor& descriptor) {
    const nlohmann::json& h = m.header;
    AttentionArgs a;
    a.batch = Int(h, "batch");
    a.q_heads = Int(h, "q_heads");
    a.kv_heads = Int(h, "kv_heads");
    a.tq = Int(h, "tq");
    a.tk = Int(h, "tk");
    a.head_dim = Int(h, "head_dim");
    a.value_dim = Int(h, "value_dim");
    a.spec = RequestSpec(h, a.q_heads, a.kv_heads, a.head_dim, a.value_dim);
    a.q = Floats(m, "q", {a.batch, a.q_heads, a.tq, a.head_dim}, guards);
    a.mask = Mask(m, Convention(h), a.batch, a.tq, a.tk, guards);
    AttachDescriptor(h, a.mask, descriptor, a.batch, a.tq, a.tk);
    a.k = Floats(m, "k", KvShape(a, a.head_dim), guards);  // the pages when paged
    a.v = Floats(m, "v", KvShape(a, a.value_dim), guards);
    a.query_positions = Ints(m, "query_positions", {a.batch, a.tq}, guards);
    a.key_positions = Ints(m, "key_positions", {a.batch, a.tk}, guards);
    a.apply_positional = Bool(h, "apply_positional");
    a.apply_bias = Bool(h, "apply_bias");
    a.scale = Number(h, "scale");
    a.current_length = Int(h, "current_length");
    return a;
  }

  Tensor Attention(const Message& m) {
    Guards guards;
    VisibilityDescriptor descriptor;
    AttentionArgs a = Arguments(m, guards, descriptor);
    a.out = guards.Out(static_cast<size_t>(a.batch) * a.q_heads * a.tq * a.value_dim);
    adapter_.attention(a);
    guards.Check();
    const std::vector<float> out(a.out.begin(), a.out.end());
    return Output({a.batch, a.q_heads, a.tq, a.value_dim}, out, options_.wrong_output_shape && a.tq % 2 == 1);
  }

  // "dq", "dk", "dv" of the adapter's backward on the request's arguments and "dout" (and the saved forward
  // "out", "lse" where the adapter declares backward_saved).
  void Backward(const Message& m, std::vector<Tensor>& tensors) {
    Guards guards;
    VisibilityDescriptor descriptor;
    BackwardArgs b;
    b.forward = Arguments(m, guards, descriptor);
    const AttentionArgs& a = b.forward;
    b.dout = Floats(m, "dout", {a.batch, a.q_heads, a.tq, a.value_dim}, guards);
    if (adapter_.capabilities().backward_saved) {
      b.saved_out = Floats(m, "out", {a.batch, a.q_heads, a.tq, a.value_dim}, guards);
      b.saved_lse = Floats(m, "lse", {a.batch, a.q_heads, a.tq}, guards);
    }
    b.dq = guards.Out(static_cast<size_t>(a.batch) * a.q_heads * a.tq * a.head_dim, "dq");
    b.dk = guards.Out(a.k.size(), "dk");
    b.dv = guards.Out(a.v.size(), "dv");
    const bool lse = adapter_.capabilities().backward_lse;
    if (lse) b.lse = guards.Out(static_cast<size_t>(a.batch) * a.q_heads * a.tq, "lse");
    adapter_.backward(b);
    guards.Check();
    tensors.push_back(Tensor::F32("dq", {a.batch, a.q_heads, a.tq, a.head_dim}, b.dq));
    tensors.push_back(Tensor::F32("dk", KvShape(a, a.head_dim), b.dk));
    tensors.push_back(Tensor::F32("dv", KvShape(a, a.value_dim), b.dv));
    if (lse) tensors.push_back(Tensor::F32("lse", {a.batch, a.q_heads, a.tq}, b.lse));
  }

  Tensor Rope(const Message& m) {
    const nlohmann::json& h = m.header;
    RopeArgs a;
    a.batch = Int(h, "batch");
    a.heads = Int(h, "heads");
    a.tokens = Int(h, "tokens");
    a.head_dim = Int(h, "head_dim");
    a.spec = RequestSpec(h, a.heads, a.heads, a.head_dim, a.head_dim);
    a.current_length = Int(h, "current_length");
    Guards guards;
    a.x = Floats(m, "x", {a.batch, a.heads, a.tokens, a.head_dim}, guards);
    a.positions = Ints(m, "positions", {a.batch, a.tokens}, guards);
    a.out = guards.Out(a.x.size());
    adapter_.rope(a);
    guards.Check();
    const std::vector<float> out(a.out.begin(), a.out.end());
    return Output({a.batch, a.heads, a.tokens, a.head_dim}, out);
  }

  uint64_t SessionId(const Message& m) {
    if (!m.header.contains("session") || !m.header["session"].is_number_unsigned()) {
      throw ProtocolError("request field 'session' is missing or not an unsigned integer");
    }
    return m.header["session"].get<uint64_t>();
  }

  OpenSession& Find(const Message& m) {
    const auto it = sessions_.find(SessionId(m));
    if (it == sessions_.end()) throw ProtocolError(fmt::format("no open session {}", SessionId(m)));
    return it->second;
  }

  void SessionOpen(const Message& m) {
    const nlohmann::json& h = m.header;
    OpenSession s;
    s.args.batch = Int(h, "batch");
    s.args.q_heads = Int(h, "q_heads");
    s.args.kv_heads = Int(h, "kv_heads");
    s.args.head_dim = Int(h, "head_dim");
    s.args.value_dim = Int(h, "value_dim");
    s.args.spec = RequestSpec(h, s.args.q_heads, s.args.kv_heads, s.args.head_dim, s.args.value_dim);
    s.args.apply_positional = Bool(h, "apply_positional");
    s.args.apply_bias = Bool(h, "apply_bias");
    s.args.scale = Number(h, "scale");
    s.args.current_length = Int(h, "current_length");
    s.session = adapter_.open_session(s.args);
    if (!s.session) throw std::runtime_error("adapter has no session");
    sessions_[SessionId(m)] = std::move(s);
  }

  void SessionAppend(const Message& m) {
    OpenSession& s = Find(m);
    const int n = Int(m.header, "n");
    const SessionArgs& a = s.args;
    Guards guards;
    s.session->append(Floats(m, "k", {a.batch, a.kv_heads, n, a.head_dim}, guards),
                      Floats(m, "v", {a.batch, a.kv_heads, n, a.value_dim}, guards),
                      Ints(m, "positions", {a.batch, n}, guards), n);
    guards.Check();
    s.length += n;
  }

  Tensor SessionAttend(const Message& m) {
    OpenSession& s = Find(m);
    const int tq = Int(m.header, "tq");
    const SessionArgs& a = s.args;
    Guards guards;
    MaskArgs mask = Mask(m, Convention(m.header), a.batch, tq, s.length, guards);
    VisibilityDescriptor descriptor;
    AttachDescriptor(m.header, mask, descriptor, a.batch, tq, s.length);
    const std::span<float> out_body = guards.Out(static_cast<size_t>(a.batch) * a.q_heads * tq * a.value_dim);
    s.session->attend(Floats(m, "q", {a.batch, a.q_heads, tq, a.head_dim}, guards),
                      Ints(m, "positions", {a.batch, tq}, guards), tq, mask, out_body);
    guards.Check();
    const std::vector<float> out(out_body.begin(), out_body.end());
    return Output({a.batch, a.q_heads, tq, a.value_dim}, out);
  }

  Adapter& adapter_;
  ServeOptions options_;
  std::map<uint64_t, OpenSession> sessions_;
};

}  // namespace

int ServeAdapter(Adapter& adapter, int in_fd, int out_fd, ServeOptions options) {
  Server server(adapter, options);
  const Deadline forever = Deadline::max();
  for (;;) {
    Message request;
    try {
      request = ReadMessage(in_fd, forever);
    } catch (const PeerClosed&) {
      return 0;  // the harness went away
    } catch (const std::exception& e) {
      // A malformed request: answer once, then stop (the stream is out of step).
      try {
        WriteAll(out_fd, EncodeMessage({{"op", "error"}, {"message", e.what()}}, {}), forever);
      } catch (...) {
      }
      return 2;
    }
    std::vector<uint8_t> answer;
    bool more = true;
    try {
      more = server.Handle(request, answer);
    } catch (const ContractViolation& e) {
      answer = EncodeMessage({{"op", "error"}, {"kind", "contract"}, {"message", e.what()}}, {});
    } catch (const CaseRefused& e) {
      answer = EncodeMessage({{"op", "error"}, {"kind", "refused"}, {"message", e.reason()}}, {});
    } catch (const std::exception& e) {
      answer = EncodeMessage({{"op", "error"}, {"message", e.what()}}, {});
    } catch (...) {
      answer = EncodeMessage({{"op", "error"}, {"message", "non-standard exception"}}, {});
    }
    if (!more) return 0;
    try {
      WriteAll(out_fd, answer, forever);
    } catch (...) {
      return 0;
    }
  }
}

}  // namespace attncheck::process
