// The server side of the process protocol over an in-tree Adapter
// (process_adapter.h ServeAdapter): what an isolated child runs. Each request is
// decoded back into the Adapter call it stands for; an exception answers
// {"op": "error"}; a crash ends the child, which the parent reports.
#include <fmt/format.h>

#include <map>

#include "adapters/process/process_adapter.h"
#include "adapters/process/protocol.h"
#include "cases/case_json.h"

namespace attncheck::process {
namespace {

using Shape = std::vector<int64_t>;

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

// The request's case with the call's mask convention (the case travels with
// mask "add-inf"; see process_adapter.cc CaseJson).
Case RequestCase(const nlohmann::json& h) {
  if (!h.contains("case")) throw ProtocolError("request has no 'case'");
  Case c = FromJson(h["case"], "request");
  c.mask = Convention(h);
  return c;
}

// The mask tensor of a request, as MaskArgs viewing the message.
MaskArgs Mask(const Message& m, MaskConvention convention, int batch, int tq, int tk) {
  MaskArgs mask;
  mask.convention = convention;
  const Shape shape{batch, tq, tk};
  if (IsAdditive(convention)) {
    mask.additive = m.Get("mask", TensorDtype::kF32, shape).f32();
  } else if (convention == MaskConvention::kBoolVisible || convention == MaskConvention::kBoolBlocked) {
    mask.boolean = m.Get("mask", TensorDtype::kU8, shape).u8();
  }
  return mask;
}

std::span<const int> Ints(const Message& m, const char* name, const Shape& shape) {
  const std::span<const int32_t> values = m.Get(name, TensorDtype::kI32, shape).i32();
  return {reinterpret_cast<const int*>(values.data()), values.size()};
}

struct OpenSession {
  std::unique_ptr<Case> c;  // SessionArgs::c points here
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

  Tensor Attention(const Message& m) {
    const nlohmann::json& h = m.header;
    const Case c = RequestCase(h);
    AttentionArgs a;
    a.c = &c;
    a.batch = Int(h, "batch");
    a.q_heads = Int(h, "q_heads");
    a.kv_heads = Int(h, "kv_heads");
    a.tq = Int(h, "tq");
    a.tk = Int(h, "tk");
    a.head_dim = Int(h, "head_dim");
    a.value_dim = Int(h, "value_dim");
    a.q = m.Get("q", TensorDtype::kF32, {a.batch, a.q_heads, a.tq, a.head_dim}).f32();
    a.k = m.Get("k", TensorDtype::kF32, {a.batch, a.kv_heads, a.tk, a.head_dim}).f32();
    a.v = m.Get("v", TensorDtype::kF32, {a.batch, a.kv_heads, a.tk, a.value_dim}).f32();
    a.query_positions = Ints(m, "query_positions", {a.batch, a.tq});
    a.key_positions = Ints(m, "key_positions", {a.batch, a.tk});
    a.mask = Mask(m, Convention(h), a.batch, a.tq, a.tk);
    a.apply_positional = Bool(h, "apply_positional");
    a.apply_bias = Bool(h, "apply_bias");
    a.scale = Number(h, "scale");
    a.current_length = Int(h, "current_length");
    std::vector<float> out(static_cast<size_t>(a.batch) * a.q_heads * a.tq * a.value_dim);
    a.out = out;
    adapter_.attention(a);
    return Output({a.batch, a.q_heads, a.tq, a.value_dim}, out, options_.wrong_output_shape && a.tq % 2 == 1);
  }

  Tensor Rope(const Message& m) {
    const nlohmann::json& h = m.header;
    const Case c = RequestCase(h);
    RopeArgs a;
    a.c = &c;
    a.batch = Int(h, "batch");
    a.heads = Int(h, "heads");
    a.tokens = Int(h, "tokens");
    a.head_dim = Int(h, "head_dim");
    a.current_length = Int(h, "current_length");
    a.x = m.Get("x", TensorDtype::kF32, {a.batch, a.heads, a.tokens, a.head_dim}).f32();
    a.positions = Ints(m, "positions", {a.batch, a.tokens});
    std::vector<float> out(a.x.size());
    a.out = out;
    adapter_.rope(a);
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
    s.c = std::make_unique<Case>(RequestCase(h));
    s.args.c = s.c.get();
    s.args.batch = Int(h, "batch");
    s.args.q_heads = Int(h, "q_heads");
    s.args.kv_heads = Int(h, "kv_heads");
    s.args.head_dim = Int(h, "head_dim");
    s.args.value_dim = Int(h, "value_dim");
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
    s.session->append(m.Get("k", TensorDtype::kF32, {a.batch, a.kv_heads, n, a.head_dim}).f32(),
                      m.Get("v", TensorDtype::kF32, {a.batch, a.kv_heads, n, a.value_dim}).f32(),
                      Ints(m, "positions", {a.batch, n}), n);
    s.length += n;
  }

  Tensor SessionAttend(const Message& m) {
    OpenSession& s = Find(m);
    const int tq = Int(m.header, "tq");
    const SessionArgs& a = s.args;
    const MaskArgs mask = Mask(m, Convention(m.header), a.batch, tq, s.length);
    std::vector<float> out(static_cast<size_t>(a.batch) * a.q_heads * tq * a.value_dim);
    s.session->attend(m.Get("q", TensorDtype::kF32, {a.batch, a.q_heads, tq, a.head_dim}).f32(),
                      Ints(m, "positions", {a.batch, tq}), tq, mask, out);
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
