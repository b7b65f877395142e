// The harness side of the adapter contract (DESIGN §5): capability checks, the
// reference stages an adapter does not own, the convention conversion of the
// visibility, and the guard margins around every buffer an adapter touches.
//
// Harness misuse (running a case the harness cannot express, e.g. a score bias
// the adapter does not own under a bool convention, or session steps that do not
// sum to Tk) throws std::invalid_argument: callers ask WhyUnsupported first.
#include "adapters/harness.h"

#include <algorithm>
#include <bit>
#include <climits>
#include <cstdint>
#include <cstring>
#include <exception>
#include <fmt/format.h>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <string_view>
#include <utility>

#include "reference/attention.h"
#include "reference/data.h"
#include "reference/mask.h"
#include "reference/positional.h"

namespace attncheck {
namespace {

template <class T>
bool Contains(const std::vector<T>& values, T x) {
  return std::find(values.begin(), values.end(), x) != values.end();
}

// ---------------------------------------------------------------------------
// Guarded buffers: [kMargin guard][body][kMargin guard]. Margins hold a pattern
// no correct kernel writes (a signalling NaN for floats, 0xA5 bytes, INT_MIN);
// an output body starts as a quiet NaN with a payload arithmetic never produces,
// so an element still holding it bitwise was never written.

constexpr size_t kMargin = 64;
constexpr uint32_t kGuardFloatBits = 0x7FA5A5A5u;     // signalling NaN (quiet bit clear)
constexpr uint32_t kSentinelFloatBits = 0x7FDEAD5Eu;  // quiet NaN, payload 0x1EAD5E

template <class T>
T GuardValue() {
  if constexpr (std::is_same_v<T, float>) {
    return std::bit_cast<float>(kGuardFloatBits);
  } else if constexpr (std::is_same_v<T, int>) {
    return INT_MIN;
  } else {
    static_assert(std::is_same_v<T, uint8_t>);
    return static_cast<uint8_t>(0xA5);
  }
}

template <class T>
bool SameBits(const T& a, const T& b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

std::string Elements(size_t n) { return fmt::format("{} element{}", n, n == 1 ? "" : "s"); }

std::string MarginText(size_t before, size_t after) {
  if (before > 0 && after > 0) return Elements(before) + " before, " + Elements(after) + " after";
  return before > 0 ? Elements(before) + " before" : Elements(after) + " after";
}

// Storage for guarded buffers, reused across runs (a law runs an adapter many
// times per case): a buffer taken from the pool is resized and every guard and
// body element rewritten, so nothing of an earlier run survives in it.
template <class T>
std::vector<std::vector<T>>& StoragePool() {
  thread_local std::vector<std::vector<T>> pool;
  return pool;
}

template <class T>
class Guarded {
 public:
  // An input buffer holding `values`, which stay alive and unchanged while the
  // buffer lives: they are the snapshot for the change check.
  Guarded(std::string_view name, std::span<const T> values) : name_(name), n_(values.size()), snapshot_(values) {
    Allocate();
    if (n_ > 0) std::memcpy(storage_.data() + kMargin, values.data(), n_ * sizeof(T));
  }
  // An output buffer of n elements, body pre-filled with the sentinel.
  Guarded(std::string_view name, size_t n) : name_(name), n_(n) {
    static_assert(std::is_same_v<T, float>, "outputs are float");
    Allocate();
    std::fill(storage_.begin() + kMargin, storage_.begin() + kMargin + n_, std::bit_cast<float>(kSentinelFloatBits));
  }
  Guarded(const Guarded&) = delete;
  Guarded& operator=(const Guarded&) = delete;
  ~Guarded() { StoragePool<T>().push_back(std::move(storage_)); }

  std::span<T> body() { return {storage_.data() + kMargin, n_}; }
  std::span<const T> cbody() const { return {storage_.data() + kMargin, n_}; }

  // Input checks: margins intact and body unchanged.
  void CheckInput(std::vector<std::string>& faults) const {
    const auto [before, after] = MarginDamage();
    if (before + after > 0) {
      faults.push_back(fmt::format("adapter wrote outside input {} ({})", name_, MarginText(before, after)));
    }
    if (n_ > 0 && std::memcmp(storage_.data() + kMargin, snapshot_.data(), n_ * sizeof(T)) != 0) {
      faults.push_back(fmt::format("adapter modified input {}", name_));
    }
  }
  // Output checks: margins intact and (unless the adapter threw) every element written.
  void CheckOutput(std::vector<std::string>& faults, bool threw = false) const {
    const auto [before, after] = MarginDamage();
    if (before + after > 0) {
      faults.push_back(fmt::format("adapter wrote outside its output ({})", MarginText(before, after)));
    }
    if (threw) return;
    size_t unwritten = 0;
    for (size_t i = 0; i < n_; ++i) {
      uint32_t bits = 0;
      std::memcpy(&bits, &storage_[kMargin + i], sizeof(bits));
      unwritten += bits == kSentinelFloatBits;
    }
    if (unwritten > 0) faults.push_back(fmt::format("adapter left {} output elements unwritten", unwritten));
  }

 private:
  void Allocate() {
    std::vector<std::vector<T>>& pool = StoragePool<T>();
    if (!pool.empty()) {
      storage_ = std::move(pool.back());
      pool.pop_back();
    }
    storage_.resize(n_ + 2 * kMargin);
    const T guard = GuardValue<T>();
    std::fill(storage_.begin(), storage_.begin() + kMargin, guard);
    std::fill(storage_.begin() + kMargin + n_, storage_.end(), guard);
  }
  std::pair<size_t, size_t> MarginDamage() const {
    const T guard = GuardValue<T>();
    size_t before = 0, after = 0;
    for (size_t i = 0; i < kMargin; ++i) {
      before += !SameBits(storage_[i], guard);
      after += !SameBits(storage_[kMargin + n_ + i], guard);
    }
    return {before, after};
  }

  std::string_view name_;  // a string literal
  size_t n_ = 0;
  std::span<const T> snapshot_;
  std::vector<T> storage_;
};

std::string Join(const std::vector<std::string>& faults) {
  std::string joined;
  for (const std::string& f : faults) joined += (joined.empty() ? "" : "; ") + f;
  return joined;
}

// ---------------------------------------------------------------------------
// Inputs as handed to adapters: float, representable in the case dtype.

TensorF ToFloat(const TensorD& t, Dtype dtype) {
  TensorF f;
  f.shape = t.shape;
  if (dtype == Dtype::kF32) {  // float(RoundTo(f32, x)) is float(x)
    f.data.assign(t.data.begin(), t.data.end());
    return f;
  }
  f.data.resize(t.data.size());
  for (size_t i = 0; i < t.data.size(); ++i) f.data[i] = static_cast<float>(reference::RoundTo(dtype, t.data[i]));
  return f;
}

TensorD ToDouble(std::span<const float> values, int n0, int n1, int n2, int n3) {
  TensorD t(n0, n1, n2, n3);
  for (size_t i = 0; i < t.data.size(); ++i) t.data[i] = values[i];
  return t;
}

// t[:, h0:h0+nh, :, :] as one span: t itself when the group has every head, else
// a copy in `scratch`.
std::span<const float> HeadSlice(const TensorF& t, int h0, int nh, TensorF& scratch);

// t[:, h0:h0+nh, t0:t0+nt, :]
TensorF Slice(const TensorF& t, int h0, int nh, int t0, int nt) {
  TensorF s(t.shape[0], nh, nt, t.shape[3]);
  for (int b = 0; b < t.shape[0]; ++b)
    for (int h = 0; h < nh; ++h)
      for (int i = 0; i < nt; ++i)
        for (int d = 0; d < t.shape[3]; ++d) s.at(b, h, i, d) = t.at(b, h0 + h, t0 + i, d);
  return s;
}

std::span<const float> HeadSlice(const TensorF& t, int h0, int nh, TensorF& scratch) {
  if (h0 == 0 && nh == t.shape[1]) return t.data;
  scratch = Slice(t, h0, nh, 0, t.shape[2]);
  return scratch.data;
}

// positions[:, t0:t0+nt] of a [B, T] array
std::vector<int> SlicePositions(const std::vector<int>& positions, int batch, int t, int t0, int nt) {
  std::vector<int> s;
  s.reserve(static_cast<size_t>(batch) * nt);
  for (int b = 0; b < batch; ++b)
    for (int i = 0; i < nt; ++i) s.push_back(positions[static_cast<size_t>(b) * t + t0 + i]);
  return s;
}

// A group of query heads run in one adapter call, with the kv heads they read.
// Normally one group holds every head; a head-dependent score bias the adapter
// does not own is folded into the (head-less) mask one query head at a time.
struct HeadGroup {
  int q_head = 0, q_heads = 0;    // query heads [q_head, q_head + q_heads)
  int kv_head = 0, kv_heads = 0;  // kv heads [kv_head, kv_head + kv_heads)
  int bias_head = 0;              // the head whose bias the group's mask carries
};

bool HeadDependentBias(const TensorD& bias) {
  const int batch = bias.shape[0], heads = bias.shape[1], tq = bias.shape[2], tk = bias.shape[3];
  for (int b = 0; b < batch; ++b)
    for (int h = 1; h < heads; ++h)
      for (int i = 0; i < tq; ++i)
        for (int j = 0; j < tk; ++j)
          if (bias.at(b, h, i, j) != bias.at(b, 0, i, j)) return true;
  return false;
}

// How the scenario is prepared for one adapter: which stages the harness runs.
struct Plan {
  Case c;  // the scenario's case with mask = the convention used
  Capabilities caps;
  bool apply_positional = false;
  bool apply_bias = false;
  bool fold_bias = false;  // bias folded into the additive mask
  std::shared_ptr<const TensorD> bias;  // [B, Hq, Tq, Tk] when folded
  std::vector<HeadGroup> groups;
  TensorF q, k, v;         // as handed over
  int current_length = 1;
};

Plan MakePlan(const Adapter& adapter, const reference::Scenario& s, MaskConvention convention) {
  Plan plan;
  plan.c = s.c;
  plan.c.mask = convention;
  plan.caps = adapter.capabilities();
  const Case& c = plan.c;
  const Dtype dtype = c.dtype;
  plan.current_length = reference::CurrentLength(s.key_positions);

  if (plan.caps.owns_rope) {
    plan.apply_positional = reference::HasQkEncoding(c);
    plan.q = ToFloat(s.q, dtype);
    plan.k = ToFloat(s.k, dtype);
  } else {
    TensorD encoded_q, encoded_k;
    reference::EncodeQk(s, encoded_q, encoded_k);
    plan.q = ToFloat(encoded_q, dtype);
    plan.k = ToFloat(encoded_k, dtype);
  }
  plan.v = ToFloat(s.v, dtype);

  const int hq = c.q_heads, hkv = c.kv_heads;
  bool per_head = false;
  if (reference::HasScoreBias(c)) {
    if (plan.caps.owns_bias) {
      plan.apply_bias = true;
    } else {
      if (!IsAdditive(convention)) {
        throw std::invalid_argument(fmt::format(
            "harness: score bias {} cannot be folded into mask convention {}", Name(c.encoding.kind),
            Name(convention)));
      }
      plan.fold_bias = true;
      plan.bias = reference::SharedBiasTensor(s);
      per_head = hq > 1 && HeadDependentBias(*plan.bias);
    }
  }
  if (per_head) {
    const int group = hq / hkv;
    for (int h = 0; h < hq; ++h) plan.groups.push_back({h, 1, h / group, 1, h});
  } else {
    plan.groups.push_back({0, hq, 0, hkv, 0});
  }
  return plan;
}

// The mask of query rows [i0, i0 + nq) over keys [0, keys) in the plan's
// convention, with the group's bias folded in where the plan says so.
struct MaskBuffers {
  std::vector<float> additive;
  std::vector<uint8_t> boolean;
};

MaskBuffers MakeMask(const Plan& plan, const reference::Scenario& s, const HeadGroup& group, int i0, int nq,
                     int keys) {
  MaskBuffers mask;
  const MaskConvention convention = plan.c.mask;
  if (IsCausalFlag(convention)) return mask;
  std::vector<uint8_t> visible;
  visible.reserve(static_cast<size_t>(s.batch) * nq * keys);
  for (int b = 0; b < s.batch; ++b)
    for (int i = i0; i < i0 + nq; ++i) {
      const uint8_t* row = s.visible.data() + (static_cast<size_t>(b) * s.tq + i) * s.tk;  // is_visible(b, i, ·)
      for (int j = 0; j < keys; ++j) visible.push_back(row[j] != 0 ? 1 : 0);
    }
  if (IsBool(convention)) {
    mask.boolean = reference::ToBool(visible, convention);
    return mask;
  }
  mask.additive = reference::ToAdditive(visible, convention, plan.c.dtype);
  if (plan.fold_bias) {
    size_t index = 0;
    for (int b = 0; b < s.batch; ++b)
      for (int i = i0; i < i0 + nq; ++i)
        for (int j = 0; j < keys; ++j, ++index)
          if (visible[index]) {
            const double bias = plan.bias->at(b, group.bias_head, i, j);
            mask.additive[index] = static_cast<float>(reference::RoundTo(plan.c.dtype, bias));
          }
  }
  return mask;
}

// Guarded copies of a mask, wired into MaskArgs.
struct GuardedMask {
  MaskBuffers mask;  // the snapshot the guarded copies are checked against
  std::optional<Guarded<float>> additive;
  std::optional<Guarded<uint8_t>> boolean;
  MaskArgs args;

  GuardedMask(MaskBuffers buffers, MaskConvention convention) : mask(std::move(buffers)) {
    args.convention = convention;
    if (IsAdditive(convention)) {
      additive.emplace("mask", std::span<const float>(mask.additive));
      args.additive = additive->cbody();
    } else if (IsBool(convention)) {
      boolean.emplace("mask", std::span<const uint8_t>(mask.boolean));
      args.boolean = boolean->cbody();
    }
  }
  void Check(std::vector<std::string>& faults) const {
    if (additive) additive->CheckInput(faults);
    if (boolean) boolean->CheckInput(faults);
  }
};

// Copies a group's output [B, nh, nq, Dv] into out[:, h0:h0+nh, i0:i0+nq, :].
void Scatter(std::span<const float> part, int nh, int nq, TensorD& out, int h0, int i0) {
  const int batch = out.shape[0], dv = out.shape[3];
  size_t index = 0;
  for (int b = 0; b < batch; ++b)
    for (int h = 0; h < nh; ++h)
      for (int i = 0; i < nq; ++i)
        for (int d = 0; d < dv; ++d) out.at(b, h0 + h, i0 + i, d) = part[index++];
}

Case GroupCase(const Case& c, const HeadGroup& group) {
  Case g = c;
  g.q_heads = group.q_heads;
  g.kv_heads = group.kv_heads;
  return g;
}

std::string Threw(const std::exception& e) { return fmt::format("adapter threw: {}", e.what()); }

// Records the exception in flight (call inside a catch block) as a fault and
// returns its classification: an AdapterError says its own (crash, timeout,
// garbage from an isolated or out-of-process adapter), anything else threw.
AdapterFault RecordThrown(std::vector<std::string>& faults) {
  try {
    throw;
  } catch (const AdapterError& e) {
    faults.push_back(e.what());
    return e.fault();
  } catch (const std::exception& e) {
    faults.push_back(Threw(e));
  } catch (...) {
    faults.push_back("adapter threw a non-standard exception");
  }
  return AdapterFault::kException;
}

// The run's fault text and class: a fault nobody classified broke the buffer contract.
void Finish(AdapterRun& run, const std::vector<std::string>& faults) {
  run.fault = Join(faults);
  if (!run.fault.empty() && run.kind == AdapterFault::kNone) run.kind = AdapterFault::kContract;
}

}  // namespace

// ---------------------------------------------------------------------------

std::optional<std::string> WhyUnsupported(const Adapter& adapter, const Case& c) {
  const Capabilities caps = adapter.capabilities();
  if (!Contains(caps.dtypes, c.dtype)) return fmt::format("dtype {} not supported", Name(c.dtype));
  if (!Contains(caps.masks, c.mask)) return fmt::format("mask convention {} not accepted", Name(c.mask));
  const EncodingKind kind = c.encoding.kind;
  if (!Contains(caps.encodings, kind)) return fmt::format("encoding {} not supported", Name(kind));
  // Layouts and scalings only limit an adapter that rotates itself; otherwise
  // the harness hands over q and k already encoded by the reference.
  if ((kind == EncodingKind::kRope || kind == EncodingKind::kXpos) && caps.owns_rope) {
    if (!Contains(caps.rope_layouts, c.encoding.rope.layout)) {
      return fmt::format("RoPE layout {} not supported", Name(c.encoding.rope.layout));
    }
    if (!Contains(caps.rope_scalings, c.encoding.rope.scaling)) {
      return fmt::format("RoPE scaling {} not supported", Name(c.encoding.rope.scaling));
    }
  }
  if (c.kv_heads != c.q_heads && !caps.gqa) {
    return fmt::format("grouped-query attention (Hq={}, Hkv={}) not supported", c.q_heads, c.kv_heads);
  }
  if (c.softcap != 0.0 && !caps.softcap) return std::string("softcap not supported");
  if (c.value_dim != c.head_dim && !caps.value_dim_differs) {
    return fmt::format("value dim {} != head dim {} not supported", c.value_dim, c.head_dim);
  }
  return adapter.unsupported(c);
}

std::optional<std::string> WhyUnsupported(const Adapter& adapter, const reference::Scenario& s,
                                          MaskConvention convention) {
  Case c = s.c;
  c.mask = convention;
  if (std::optional<std::string> why = WhyUnsupported(adapter, c)) return why;
  if (IsCausalFlag(convention)) {
    const std::vector<uint8_t> pattern = reference::CausalFlagPattern(convention, s.tq, s.tk);
    for (int b = 0; b < s.batch; ++b)
      for (int i = 0; i < s.tq; ++i)
        for (int j = 0; j < s.tk; ++j)
          if ((pattern[static_cast<size_t>(i) * s.tk + j] != 0) != s.is_visible(b, i, j)) {
            return std::string("causal-flag convention cannot express padding/documents/non-causal visibility");
          }
  }
  if (reference::HasScoreBias(c) && !adapter.capabilities().owns_bias && !IsAdditive(convention)) {
    return fmt::format("score bias {} needs an additive mask convention, not {}", Name(c.encoding.kind),
                       Name(convention));
  }
  return std::nullopt;
}

AdapterRun RunAttention(Adapter& adapter, const reference::Scenario& s, std::optional<MaskConvention> convention) {
  const Plan plan = MakePlan(adapter, s, convention.value_or(s.c.mask));
  const Case& c = plan.c;
  const int dv = c.value_dim, d = c.head_dim;
  AdapterRun run;
  run.out = TensorD(s.batch, c.q_heads, s.tq, dv);
  std::vector<std::string> faults;

  for (const HeadGroup& group : plan.groups) {
    const Case group_case = GroupCase(c, group);
    TensorF q_scratch, k_scratch, v_scratch;
    Guarded<float> q_buffer("q", HeadSlice(plan.q, group.q_head, group.q_heads, q_scratch));
    Guarded<float> k_buffer("k", HeadSlice(plan.k, group.kv_head, group.kv_heads, k_scratch));
    Guarded<float> v_buffer("v", HeadSlice(plan.v, group.kv_head, group.kv_heads, v_scratch));
    Guarded<int> query_positions("query_positions", std::span<const int>(s.query_positions));
    Guarded<int> key_positions("key_positions", std::span<const int>(s.key_positions));
    const GuardedMask mask(MakeMask(plan, s, group, 0, s.tq, s.tk), c.mask);
    const size_t out_size = static_cast<size_t>(s.batch) * group.q_heads * s.tq * dv;
    Guarded<float> out("out", out_size);

    AttentionArgs args;
    args.c = &group_case;
    args.batch = s.batch;
    args.q_heads = group.q_heads;
    args.kv_heads = group.kv_heads;
    args.tq = s.tq;
    args.tk = s.tk;
    args.head_dim = d;
    args.value_dim = dv;
    args.q = q_buffer.cbody();
    args.k = k_buffer.cbody();
    args.v = v_buffer.cbody();
    args.query_positions = query_positions.cbody();
    args.key_positions = key_positions.cbody();
    args.mask = mask.args;
    args.apply_positional = plan.apply_positional;
    args.apply_bias = plan.apply_bias;
    args.scale = c.effective_scale();
    args.current_length = plan.current_length;
    args.out = out.body();
    const size_t faults_before = faults.size();
    try {
      adapter.attention(args);
    } catch (...) {
      run.kind = RecordThrown(faults);
    }
    out.CheckOutput(faults, /*threw=*/faults.size() > faults_before);
    q_buffer.CheckInput(faults);
    k_buffer.CheckInput(faults);
    v_buffer.CheckInput(faults);
    query_positions.CheckInput(faults);
    key_positions.CheckInput(faults);
    mask.Check(faults);
    Scatter(out.cbody(), group.q_heads, s.tq, run.out, group.q_head, 0);
    if (!faults.empty()) break;
  }
  Finish(run, faults);
  return run;
}

AdapterRun RunSession(Adapter& adapter, const reference::Scenario& s, std::span<const int> steps,
                      std::optional<MaskConvention> convention) {
  const int total = std::accumulate(steps.begin(), steps.end(), 0);
  if (total != s.tk || std::any_of(steps.begin(), steps.end(), [](int n) { return n < 0; })) {
    throw std::invalid_argument(fmt::format("harness: session steps sum to {}, not Tk = {}", total, s.tk));
  }
  const Plan plan = MakePlan(adapter, s, convention.value_or(s.c.mask));
  const Case& c = plan.c;
  const int dv = c.value_dim, d = c.head_dim, past = s.tk - s.tq;
  AdapterRun run;
  run.out = TensorD(s.batch, c.q_heads, s.tq, dv);
  std::vector<std::string> faults;

  // Group cases live as long as their sessions (SessionArgs::c points at them).
  std::vector<Case> group_cases;
  for (const HeadGroup& group : plan.groups) group_cases.push_back(GroupCase(c, group));
  std::vector<std::unique_ptr<Session>> sessions;
  try {
    for (size_t g = 0; g < plan.groups.size(); ++g) {
      SessionArgs args;
      args.c = &group_cases[g];
      args.batch = s.batch;
      args.q_heads = plan.groups[g].q_heads;
      args.kv_heads = plan.groups[g].kv_heads;
      args.head_dim = d;
      args.value_dim = dv;
      args.apply_positional = plan.apply_positional;
      args.apply_bias = plan.apply_bias;
      args.scale = c.effective_scale();
      args.current_length = plan.current_length;
      std::unique_ptr<Session> session = adapter.open_session(args);
      if (!session) {
        run.fault = "adapter has no session";
        return run;
      }
      sessions.push_back(std::move(session));
    }

    int t0 = 0;
    for (int n : steps) {
      if (n == 0) continue;
      // append the step's keys and values
      for (size_t g = 0; g < plan.groups.size() && faults.empty(); ++g) {
        const HeadGroup& group = plan.groups[g];
        const TensorF k = Slice(plan.k, group.kv_head, group.kv_heads, t0, n);
        const TensorF v = Slice(plan.v, group.kv_head, group.kv_heads, t0, n);
        const std::vector<int> positions = SlicePositions(s.key_positions, s.batch, s.tk, t0, n);
        Guarded<float> k_buffer("k", std::span<const float>(k.data));
        Guarded<float> v_buffer("v", std::span<const float>(v.data));
        Guarded<int> position_buffer("key_positions", std::span<const int>(positions));
        sessions[g]->append(k_buffer.cbody(), v_buffer.cbody(), position_buffer.cbody(), n);
        k_buffer.CheckInput(faults);
        v_buffer.CheckInput(faults);
        position_buffer.CheckInput(faults);
      }
      const int keys = t0 + n;
      t0 = keys;
      if (!faults.empty()) break;
      // the query slots among the appended ones: a suffix of the step
      const int i0 = std::max(keys - n, past) - past, i1 = keys - past;
      if (i1 <= i0) continue;
      const int nq = i1 - i0;
      for (size_t g = 0; g < plan.groups.size() && faults.empty(); ++g) {
        const HeadGroup& group = plan.groups[g];
        const TensorF q = Slice(plan.q, group.q_head, group.q_heads, i0, nq);
        const std::vector<int> positions = SlicePositions(s.query_positions, s.batch, s.tq, i0, nq);
        Guarded<float> q_buffer("q", std::span<const float>(q.data));
        Guarded<int> position_buffer("query_positions", std::span<const int>(positions));
        const GuardedMask mask(MakeMask(plan, s, group, i0, nq, keys), c.mask);
        Guarded<float> out("out", static_cast<size_t>(s.batch) * group.q_heads * nq * dv);
        sessions[g]->attend(q_buffer.cbody(), position_buffer.cbody(), nq, mask.args, out.body());
        out.CheckOutput(faults);
        q_buffer.CheckInput(faults);
        position_buffer.CheckInput(faults);
        mask.Check(faults);
        Scatter(out.cbody(), group.q_heads, nq, run.out, group.q_head, i0);
      }
      if (!faults.empty()) break;
    }
  } catch (...) {
    run.kind = RecordThrown(faults);
  }
  Finish(run, faults);
  return run;
}

AdapterRun RunRope(Adapter& adapter, const Case& c, const TensorD& x, std::span<const int> positions,
                   int current_length) {
  AdapterRun run;
  const int batch = x.shape[0], heads = x.shape[1], tokens = x.shape[2], dim = x.shape[3];
  run.out = TensorD(batch, heads, tokens, dim);
  if (!adapter.capabilities().has_rope_stage) {
    run.fault = "adapter has no rope stage";
    return run;
  }
  const TensorF x_float = ToFloat(x, c.dtype);
  Guarded<float> x_buffer("x", std::span<const float>(x_float.data));
  Guarded<int> position_buffer("positions", positions);
  Guarded<float> out("out", x_float.size());
  RopeArgs args;
  args.c = &c;
  args.batch = batch;
  args.heads = heads;
  args.tokens = tokens;
  args.head_dim = dim;
  args.x = x_buffer.cbody();
  args.positions = position_buffer.cbody();
  args.current_length = current_length;
  args.out = out.body();
  std::vector<std::string> faults;
  try {
    adapter.rope(args);
  } catch (...) {
    run.kind = RecordThrown(faults);
  }
  out.CheckOutput(faults, /*threw=*/!faults.empty());
  x_buffer.CheckInput(faults);
  position_buffer.CheckInput(faults);
  run.out = ToDouble(out.cbody(), batch, heads, tokens, dim);
  Finish(run, faults);
  return run;
}

std::optional<std::string> WhySessionCannotExpress(const reference::Scenario& s, std::span<const int> steps) {
  std::vector<int> step_end(static_cast<size_t>(s.tk), s.tk);  // key slot → end of its step
  int t0 = 0;
  for (int n : steps) {
    for (int t = t0; t < std::min(t0 + n, s.tk); ++t) step_end[static_cast<size_t>(t)] = t0 + n;
    t0 += n;
  }
  for (int b = 0; b < s.batch; ++b)
    for (int i = 0; i < s.tq; ++i)
      for (int j = 0; j < s.tk; ++j)
        if (s.is_visible(b, i, j) && j >= step_end[static_cast<size_t>(s.query_slot(i))]) {
          return fmt::format("query {} of row {} reads key slot {}, appended in a later decode step", i, b, j);
        }
  return std::nullopt;
}

std::vector<int> SessionSteps(const Case& c) {
  const int tk = c.key_len();
  if (c.decode_chunks.empty()) return {tk};
  const int chunks = std::accumulate(c.decode_chunks.begin(), c.decode_chunks.end(), 0);
  std::vector<int> steps;
  if (tk - chunks != 0) steps.push_back(tk - chunks);
  for (int chunk : c.decode_chunks) steps.push_back(chunk);
  return steps;
}

}  // namespace attncheck
