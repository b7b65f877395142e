// The harness side of the adapter contract (DESIGN §5): capability checks, the
// reference stages an adapter does not own, the convention conversion of the
// visibility, and one GuardedCall (adapters/guarded_call.h) around every adapter
// call, which guards and checks each buffer it hands over.
//
// Harness misuse (running a case the harness cannot express, e.g. a score bias
// the adapter does not own under a bool convention, or session steps that do not
// sum to Tk) throws std::invalid_argument: callers ask WhyUnsupported first.
#include "adapters/harness.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <fmt/format.h>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <utility>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "adapters/guarded_call.h"
#include "adapters/packing.h"
#include "reference/attention.h"
#include "reference/data.h"
#include "reference/descriptor.h"
#include "reference/mask.h"
#include "reference/positional.h"

namespace attncheck {
namespace {

thread_local double adapter_seconds = 0.0;

// Adds the time from construction to destruction to AdapterSeconds(): one scope
// per adapter call, inside the guarded call (so the guard checks do not count).
class AdapterTimer {
 public:
  AdapterTimer() : start_(std::chrono::steady_clock::now()) {}
  ~AdapterTimer() { adapter_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }
  AdapterTimer(const AdapterTimer&) = delete;
  AdapterTimer& operator=(const AdapterTimer&) = delete;

 private:
  std::chrono::steady_clock::time_point start_;
};

template <class T>
bool Contains(const std::vector<T>& values, T x) {
  return std::find(values.begin(), values.end(), x) != values.end();
}

// ---------------------------------------------------------------------------
// Inputs as handed to adapters: float, representable in the case dtype.

// to[e] = float(from[e]) (round to nearest), two at a time where SSE2 converts pairs.
void Narrow(const double* from, size_t n, float* to) {
  size_t e = 0;
#if defined(__SSE2__)
  for (; e + 4 <= n; e += 4) {
    const __m128 low = _mm_cvtpd_ps(_mm_loadu_pd(from + e)), high = _mm_cvtpd_ps(_mm_loadu_pd(from + e + 2));
    _mm_storeu_ps(to + e, _mm_movelh_ps(low, high));
  }
#endif
  for (; e < n; ++e) to[e] = static_cast<float>(from[e]);
}

// to[e] = double(from[e]) (exact), two at a time where SSE2 converts pairs.
void Widen(const float* from, size_t n, double* to) {
  size_t e = 0;
#if defined(__SSE2__)
  for (; e + 4 <= n; e += 4) {
    const __m128 x = _mm_loadu_ps(from + e);
    _mm_storeu_pd(to + e, _mm_cvtps_pd(x));
    _mm_storeu_pd(to + e + 2, _mm_cvtps_pd(_mm_movehl_ps(x, x)));
  }
#endif
  for (; e < n; ++e) to[e] = from[e];
}

// Into `f`, whose storage is reused (the harness keeps it per thread: no allocation per call).
void ToFloat(const TensorD& t, Dtype dtype, TensorF& f) {
  f.shape = t.shape;
  if (dtype == Dtype::kF32) {  // float(RoundTo(f32, x)) is float(x)
    f.data.resize(t.data.size());
    Narrow(t.data.data(), t.data.size(), f.data.data());
    return;
  }
  f.data.resize(t.data.size());
  for (size_t i = 0; i < t.data.size(); ++i) f.data[i] = static_cast<float>(reference::RoundTo(dtype, t.data[i]));
}

TensorF ToFloat(const TensorD& t, Dtype dtype) {
  TensorF f;
  ToFloat(t, dtype, f);
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

// s = t[:, h0:h0+nh, t0:t0+nt, :] (s's storage reused)
void Slice(const TensorF& t, int h0, int nh, int t0, int nt, TensorF& s) {
  const int batch = t.shape[0], dims = t.shape[3];
  s.shape = {batch, nh, nt, dims};
  s.data.resize(static_cast<size_t>(batch) * nh * nt * dims);
  float* out = s.data.data();
  for (int b = 0; b < batch; ++b)
    for (int h = 0; h < nh; ++h) {
      const size_t rows = static_cast<size_t>(nt) * dims;  // tokens t0.. of one head are contiguous
      if (rows > 0) std::copy_n(&t.at(b, h0 + h, t0, 0), rows, out);
      out += rows;
    }
}

std::span<const float> HeadSlice(const TensorF& t, int h0, int nh, TensorF& scratch) {
  if (h0 == 0 && nh == t.shape[1]) return t.data;
  Slice(t, h0, nh, 0, t.shape[2], scratch);
  return scratch.data;
}

// s = positions[:, t0:t0+nt] of a [B, T] array (s's storage reused)
void SlicePositions(const std::vector<int>& positions, int batch, int t, int t0, int nt, std::vector<int>& s) {
  s.clear();
  for (int b = 0; b < batch; ++b) {
    const auto row = positions.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(b) * t + t0);
    s.insert(s.end(), row, row + nt);
  }
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
// Made afresh for every run (ResetPlan): only the storage of q, k, v and the head
// groups is reused, so nothing decided for one case or adapter reaches the next.
struct Plan {
  Case c;  // the scenario's case with mask = the convention used
  bool apply_positional = false;
  bool apply_bias = false;
  bool fold_bias = false;  // bias folded into the additive mask
  std::shared_ptr<const TensorD> bias;  // [B, Hq, Tq, Tk] when folded
  std::vector<HeadGroup> groups;
  TensorF q, k, v;         // as handed over
  int current_length = 1;
  DescriptorForms forms;   // the adapter's, for a kDescriptor convention
  // Non-empty when q or k as the harness encoded them overflow the case dtype
  // (xPos growth at large positions in f16): the case cannot be handed over.
  std::string unrepresentable;
};

// Why q or k encoded by the harness cannot be handed over in `dtype`: an element
// finite before encoding (`raw`) is not once encoded and rounded (`handed`). Empty
// when every one is.
std::string Overflow(const char* name, const TensorD& raw, const TensorF& handed, Dtype dtype) {
  for (size_t e = 0; e < handed.data.size(); ++e) {
    if (std::isfinite(raw.data[e]) && !std::isfinite(handed.data[e])) {
      return fmt::format("{} as the harness encodes it overflows {} ({}[{}] = {:g} before encoding): not "
                         "representable in the case dtype",
                         name, Name(dtype), name, e, raw.data[e]);
    }
  }
  return {};
}

// A mask in the convention's form (MakeMask).
struct MaskBuffers {
  std::vector<float> additive;
  std::vector<uint8_t> boolean;
  std::optional<VisibilityDescriptor> descriptor;  // kDescriptor (reference::Describe)
};

// The last whole mask (every query row over every key) RunAttention built, with
// everything it is a function of: a law runs the adapter on many scenarios of one
// layout (perturbed data, repeated calls), so the next call usually finds it.
struct MaskCache {
  bool valid = false;
  MaskConvention convention{};
  Dtype dtype{};
  int batch = 0, tq = 0, tk = 0, bias_head = 0;
  std::shared_ptr<const TensorD> bias;  // the folded bias (held: its address stays its own)
  std::vector<uint8_t> visible;
  MaskBuffers mask;
};

// The buffers of one harness run, kept per thread and reused by the next run
// (a law runs the adapter many times per case, a bench or gate many cases): each
// is overwritten in full before use, so nothing of an earlier run survives.
struct Workspace {
  Plan plan;
  TensorF q_part, k_part, v_part;  // head groups' and session steps' slices
  std::vector<int> positions;      // a session step's positions
  MaskBuffers step_mask;           // a session step's mask
  MaskCache whole_mask;
  PackedCall packed;               // a varlen or paged descriptor call's tensors
  std::shared_ptr<const TensorD> scanned_bias;  // the last bias HeadDependentBias scanned (held)
  bool scanned_bias_per_head = false;           // and its answer
  const Adapter* adapter = nullptr;             // the adapter and case the two above were computed for
  std::optional<Case> c;
  bool busy = false;
};

// The thread's workspace, or a fresh one for a run nested in another (an adapter
// that runs the harness itself).
class WorkspaceLease {
 public:
  WorkspaceLease() {
    thread_local Workspace workspace;
    if (workspace.busy) {
      own_ = std::make_unique<Workspace>();
      workspace_ = own_.get();
    } else {
      workspace_ = &workspace;
    }
    workspace_->busy = true;
  }
  ~WorkspaceLease() { workspace_->busy = false; }
  WorkspaceLease(const WorkspaceLease&) = delete;
  WorkspaceLease& operator=(const WorkspaceLease&) = delete;
  Workspace& operator*() const { return *workspace_; }

 private:
  Workspace* workspace_ = nullptr;
  std::unique_ptr<Workspace> own_;
};

// A default Plan that keeps plan's storage (q, k, v, groups; overwritten in full by MakePlan).
void ResetPlan(Plan& plan) {
  Plan fresh;
  fresh.q = std::move(plan.q);
  fresh.k = std::move(plan.k);
  fresh.v = std::move(plan.v);
  fresh.groups = std::move(plan.groups);
  fresh.groups.clear();
  plan = std::move(fresh);
}

// What the workspace computed for another case or adapter (the whole mask, the
// bias scan) is dropped before it could be seen: each is a function of its key
// alone, and scoped to one (adapter, case) besides.
void ScopeWorkspace(const Adapter& adapter, const Case& c, Workspace& work) {
  if (work.adapter == &adapter && work.c && *work.c == c) return;
  work.whole_mask.valid = false;
  work.whole_mask.bias.reset();
  work.scanned_bias.reset();
  work.scanned_bias_per_head = false;
  work.adapter = &adapter;
  work.c = c;
}

// Fills work.plan (its storage reused).
void MakePlan(const Adapter& adapter, const reference::Scenario& s, MaskConvention convention, Workspace& work) {
  ScopeWorkspace(adapter, s.c, work);
  Plan& plan = work.plan;
  ResetPlan(plan);
  plan.c = s.c;
  plan.c.mask = convention;
  const Capabilities caps = adapter.capabilities();
  plan.forms = caps.descriptor_forms;
  const Case& c = plan.c;
  const Dtype dtype = c.dtype;
  plan.current_length = reference::CurrentLength(s.key_positions);

  if (caps.owns_rope) {
    plan.apply_positional = reference::HasQkEncoding(c);
    ToFloat(s.q, dtype, plan.q);
    ToFloat(s.k, dtype, plan.k);
  } else {
    TensorD encoded_q, encoded_k;
    reference::EncodeQk(s, encoded_q, encoded_k);
    ToFloat(encoded_q, dtype, plan.q);
    ToFloat(encoded_k, dtype, plan.k);
    if (reference::HasQkEncoding(c)) {
      plan.unrepresentable = Overflow("q", s.q, plan.q, dtype);
      if (plan.unrepresentable.empty()) plan.unrepresentable = Overflow("k", s.k, plan.k, dtype);
    }
  }
  ToFloat(s.v, dtype, plan.v);

  const int hq = c.q_heads, hkv = c.kv_heads;
  bool per_head = false;
  if (reference::HasScoreBias(c)) {
    if (caps.owns_bias) {
      plan.apply_bias = true;
    } else {
      if (!IsAdditive(convention)) {
        throw std::invalid_argument(fmt::format(
            "harness: score bias {} cannot be folded into mask convention {}", Name(c.encoding.kind),
            Name(convention)));
      }
      plan.fold_bias = true;
      plan.bias = reference::SharedBiasTensor(s);
      if (plan.bias != work.scanned_bias) {  // an immutable tensor: one scan per bias
        work.scanned_bias_per_head = HeadDependentBias(*plan.bias);
        work.scanned_bias = plan.bias;
      }
      per_head = hq > 1 && work.scanned_bias_per_head;
    }
  }
  if (per_head) {
    const int group = hq / hkv;
    for (int h = 0; h < hq; ++h) plan.groups.push_back({h, 1, h / group, 1, h});
  } else {
    plan.groups.push_back({0, hq, 0, hkv, 0});
  }
}

// The mask of query rows [i0, i0 + nq) over keys [0, keys) in the plan's
// convention, with the group's bias folded in where the plan says so, into
// `mask` (its storage reused; the convention's tensor overwritten in full, the
// other one emptied). reference/mask.h ToBool and ToAdditive, row by row.
void MakeMask(const Plan& plan, const reference::Scenario& s, const HeadGroup& group, int i0, int nq, int keys,
              MaskBuffers& mask) {
  const MaskConvention convention = plan.c.mask;
  mask.additive.clear();
  mask.boolean.clear();
  mask.descriptor.reset();
  if (IsCausalFlag(convention)) return;
  if (convention == MaskConvention::kDescriptor) {
    // The whole case, or the decode step's (its queries are the last nq of `keys`).
    const bool whole = i0 == 0 && nq == s.tq && keys == s.tk;
    std::string why;
    mask.descriptor = reference::Describe(whole ? plan.c : reference::StepCase(plan.c, keys, nq), plan.forms, &why);
    // Unreachable for one call (WhyUnsupported describes the case first); a session
    // step in the padded forms of SessionForms may not be expressible: a skip.
    if (!mask.descriptor) throw CaseRefused("decode session (a padded KV cache): " + why);
    return;
  }
  const size_t size = static_cast<size_t>(s.batch) * nq * keys;
  if (IsBool(convention)) {
    const uint8_t visible_value = convention == MaskConvention::kBoolBlocked ? 0 : 1;
    mask.boolean.resize(size);
    uint8_t* to = mask.boolean.data();
    for (int b = 0; b < s.batch; ++b)
      for (int i = i0; i < i0 + nq; ++i) {
        const uint8_t* row = s.visible.data() + (static_cast<size_t>(b) * s.tq + i) * s.tk;  // is_visible(b, i, ·)
        for (int j = 0; j < keys; ++j) *to++ = row[j] != 0 ? visible_value : 1 - visible_value;
      }
    return;
  }
  const float fill = static_cast<float>(reference::AdditiveFill(convention, plan.c.dtype));
  mask.additive.resize(size);
  float* to = mask.additive.data();
  for (int b = 0; b < s.batch; ++b)
    for (int i = i0; i < i0 + nq; ++i) {
      const uint8_t* row = s.visible.data() + (static_cast<size_t>(b) * s.tq + i) * s.tk;
      if (!plan.fold_bias) {
        for (int j = 0; j < keys; ++j) *to++ = row[j] != 0 ? 0.0f : fill;
        continue;
      }
      const double* bias = &plan.bias->at(b, group.bias_head, i, 0);
      for (int j = 0; j < keys; ++j)
        *to++ = row[j] != 0 ? static_cast<float>(reference::RoundTo(plan.c.dtype, bias[j])) : fill;
    }
}

// MakeMask over every query row and key, from the workspace's cache when nothing
// it depends on changed.
const MaskBuffers& WholeMask(const Plan& plan, const reference::Scenario& s, const HeadGroup& group, Workspace& work) {
  MaskCache& cache = work.whole_mask;
  const int bias_head = plan.fold_bias ? group.bias_head : 0;
  if (plan.c.mask == MaskConvention::kDescriptor) {  // a function of the case, not only of the visibility
    cache.valid = false;
    MakeMask(plan, s, group, 0, s.tq, s.tk, cache.mask);
    return cache.mask;
  }
  if (cache.valid && cache.convention == plan.c.mask && cache.dtype == plan.c.dtype && cache.batch == s.batch &&
      cache.tq == s.tq && cache.tk == s.tk && cache.bias_head == bias_head && cache.bias == plan.bias &&
      cache.visible == s.visible) {
    return cache.mask;
  }
  cache.valid = false;
  MakeMask(plan, s, group, 0, s.tq, s.tk, cache.mask);
  cache.convention = plan.c.mask;
  cache.dtype = plan.c.dtype;
  cache.batch = s.batch;
  cache.tq = s.tq;
  cache.tk = s.tk;
  cache.bias_head = bias_head;
  cache.bias = plan.bias;
  cache.visible = s.visible;
  cache.valid = true;
  return cache.mask;
}

// The mask handed over in `convention`, declared as the call's input "mask"
// (`mask` must outlive the call); causal-flag conventions carry no tensor.
MaskArgs DeclareMask(GuardedCall& call, const MaskBuffers& mask, MaskConvention convention) {
  MaskArgs args;
  args.convention = convention;
  if (IsAdditive(convention)) {
    args.additive = call.Input("mask", std::span<const float>(mask.additive));
  } else if (IsBool(convention)) {
    args.boolean = call.Input("mask", std::span<const uint8_t>(mask.boolean));
  } else if (mask.descriptor) {
    args.descriptor = &*mask.descriptor;
  }
  return args;
}

// Copies a group's output [B, nh, nq, Dv] into out[:, h0:h0+nh, i0:i0+nq, :].
void Scatter(std::span<const float> part, int nh, int nq, TensorD& out, int h0, int i0) {
  const int batch = out.shape[0], dv = out.shape[3];
  if (dv == 0 || nq == 0) return;
  const float* from = part.data();
  for (int b = 0; b < batch; ++b)
    for (int h = 0; h < nh; ++h) {
      Widen(from, static_cast<size_t>(nq) * dv, &out.at(b, h0 + h, i0, 0));  // rows i0.. of one head are contiguous
      from += static_cast<size_t>(nq) * dv;
    }
}

Case GroupCase(const Case& c, const HeadGroup& group) {
  Case g = c;
  g.q_heads = group.q_heads;
  g.kv_heads = group.kv_heads;
  return g;
}

std::string Join(const std::vector<std::string>& faults) {
  std::string joined;
  for (const std::string& f : faults) joined += (joined.empty() ? "" : "; ") + f;
  return joined;
}

// The run's fault text and class: a fault nobody classified broke the buffer contract.
void Finish(AdapterRun& run, const CallFaults& faults) {
  run.fault = Join(faults.messages);
  run.kind = faults.thrown;
  if (!run.fault.empty() && run.kind == AdapterFault::kNone) run.kind = AdapterFault::kContract;
}

// The largest |S_ij| over every (b, h, i, j), visible or not: the score with the
// softcap and the score bias of the reference (reference/attention.h), from q and
// k as encoded for the adapter (in double; the dtype's rounding moves it by far
// less than the margin below) — or, when that is at most `enough`, the cheaper
// Cauchy–Schwarz bound scale·max‖q‖·max‖k‖ (capped by the softcap) + max|bias|.
double MaxAbsScore(const reference::Scenario& s, double enough) {
  TensorD encoded_q, encoded_k;  // the scenario's own q and k when nothing encodes them (no copy)
  const bool encoded = reference::HasQkEncoding(s.c);
  if (encoded) reference::EncodeQk(s, encoded_q, encoded_k);
  const TensorD& q = encoded ? encoded_q : s.q;
  const TensorD& k = encoded ? encoded_k : s.k;
  const bool has_bias = reference::HasScoreBias(s.c);
  const std::shared_ptr<const TensorD> bias = has_bias ? reference::SharedBiasTensor(s) : nullptr;
  const int hq = q.shape[1], group = hq / k.shape[1], d = q.shape[3];
  const double scale = s.c.effective_scale(), softcap = s.c.softcap;
  auto max_norm = [d](const TensorD& t) {
    double largest = 0.0;
    for (size_t row = 0; row * d < t.data.size(); ++row) {
      double sum = 0.0;
      for (int e = 0; e < d; ++e) sum += t.data[row * d + e] * t.data[row * d + e];
      largest = std::max(largest, sum);
    }
    return std::sqrt(largest);
  };
  double max_bias = 0.0;
  if (has_bias)
    for (double x : bias->data) max_bias = std::max(max_bias, std::abs(x));
  double dot_bound = scale * max_norm(q) * max_norm(k);
  if (softcap > 0.0) dot_bound = std::min(dot_bound, softcap);
  if (dot_bound + max_bias < enough) return dot_bound + max_bias;
  double largest = 0.0;
  for (int b = 0; b < s.batch; ++b)
    for (int h = 0; h < hq; ++h)
      for (int i = 0; i < s.tq; ++i)
        for (int j = 0; j < s.tk; ++j) {
          double dot = 0.0;
          for (int e = 0; e < d; ++e) dot += q.at(b, h, i, e) * k.at(b, h / group, j, e);
          double score = scale * dot;
          if (softcap > 0.0) score = softcap * std::tanh(score / softcap);
          if (has_bias) score += bias->at(b, h, i, j);
          largest = std::max(largest, std::abs(score));
        }
  return largest;
}

// Margin of a finite fill beyond the score range: e^−128 < 2^−150, so a blocked
// key's weight exp(S_blocked + fill − max_visible S) rounds to 0 in f32 and bf16
// (smallest subnormal 2^−149, e^−103.3) and far more so in f16.
constexpr double kFillMargin = 128.0;

// Why `convention`'s finite fill cannot block in scenario s: the worst row has
// a blocked key scoring +max|S| and visible keys scoring −max|S|, so the fill must
// lie below −(2·max|S| + kFillMargin). With scores beyond ±1e4 a −1e4 fill no
// longer blocks, while the oracle treats blocked as blocked.
std::optional<std::string> WhyFillCannotBlock(const reference::Scenario& s, MaskConvention convention) {
  if (!IsAdditive(convention)) return std::nullopt;
  const double fill = reference::AdditiveFill(convention, s.c.dtype);
  if (!std::isfinite(fill) || s.q.data.empty()) return std::nullopt;
  const double largest = MaxAbsScore(s, (-fill - kFillMargin) / 2.0);
  if (fill < -(2.0 * largest + kFillMargin)) return std::nullopt;
  return fmt::format("mask fill {:g} of {} cannot block scores up to |{:.6g}| (needs < -(2*max|S| + {:g}))", fill,
                     Name(convention), largest, kFillMargin);
}

// Why causal flag `convention` is not the scenario's visibility in some session
// step (nullopt for every other convention): in a step, the flag's rule over the
// step's queries (a suffix of its keys, as RunSession slices them) and the keys so far.
std::optional<std::string> WhyFlagCannotExpressSteps(const reference::Scenario& s, std::span<const int> steps,
                                                     MaskConvention convention) {
  if (!IsCausalFlag(convention)) return std::nullopt;
  const int past = s.tk - s.tq;
  int keys = 0;
  for (int n : steps) {
    keys += n;
    const int i0 = std::max(keys - n, past) - past, i1 = keys - past;
    if (n == 0 || i1 <= i0) continue;
    const std::vector<uint8_t> pattern = reference::CausalFlagPattern(convention, i1 - i0, keys);
    for (int b = 0; b < s.batch; ++b)
      for (int i = i0; i < i1; ++i)
        for (int j = 0; j < keys; ++j)
          if ((pattern[static_cast<size_t>(i - i0) * keys + j] != 0) != s.is_visible(b, i, j)) {
            return fmt::format("{} in a decode step of {} queries over {} keys is not the case's visibility",
                               Name(convention), i1 - i0, keys);
          }
  }
  return std::nullopt;
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
  if (c.query_len > c.key_len() && !caps.queries_beyond_keys) {
    return fmt::format("Tq {} > Tk {} not supported (queries_beyond_keys)", c.query_len, c.key_len());
  }
  return adapter.unsupported(c);
}

std::optional<std::string> WhyUnsupported(const Adapter& adapter, const reference::Scenario& s,
                                          MaskConvention convention) {
  std::optional<Case> relaid;  // the case in `convention`, when that is not its own
  if (convention != s.c.mask) {
    relaid = s.c;
    relaid->mask = convention;
  }
  const Case& c = relaid ? *relaid : s.c;
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
  if (convention == MaskConvention::kDescriptor) {
    std::string why;
    if (!reference::Describe(c, adapter.capabilities().descriptor_forms, &why)) return "descriptor: " + why;
  }
  if (reference::HasScoreBias(c) && !adapter.capabilities().owns_bias && !IsAdditive(convention)) {
    return fmt::format("score bias {} needs an additive mask convention, not {}", Name(c.encoding.kind),
                       Name(convention));
  }
  return WhyFillCannotBlock(s, convention);
}

// A plan whose inputs cannot be handed over ends the run as a refusal (a skip with
// the reason, properties/law_support.h), without calling the adapter.
bool Unrepresentable(const Plan& plan, AdapterRun& run) {
  if (plan.unrepresentable.empty()) return false;
  run.kind = AdapterFault::kRefused;
  run.fault = "refused by the harness: " + plan.unrepresentable;
  return true;
}

AdapterRun RunAttention(Adapter& adapter, const reference::Scenario& s, std::optional<MaskConvention> convention) {
  const WorkspaceLease lease;
  Workspace& work = *lease;
  const Plan& plan = work.plan;
  MakePlan(adapter, s, convention.value_or(s.c.mask), work);
  const Case& c = plan.c;
  const int dv = c.value_dim, d = c.head_dim;
  AdapterRun run;
  run.out = TensorD(s.batch, c.q_heads, s.tq, dv);
  if (Unrepresentable(plan, run)) return run;
  CallFaults faults;

  for (const HeadGroup& group : plan.groups) {
    // The plan's case itself when the group holds every head (no copy).
    const bool every_head = group.q_heads == c.q_heads && group.kv_heads == c.kv_heads;
    const std::optional<Case> own_case = every_head ? std::nullopt : std::optional<Case>(GroupCase(c, group));
    const Case& group_case = every_head ? c : *own_case;
    const MaskBuffers& mask = WholeMask(plan, s, group, work);
    // A varlen or paged descriptor takes its own tensor layout (adapters/packing.h);
    // descriptors never fold a bias, so the group holds every head.
    const bool packed = mask.descriptor && NeedsPacking(*mask.descriptor);
    PackedCall& p = work.packed;
    if (packed) Pack(c, *mask.descriptor, plan.q, plan.k, plan.v, s.query_positions, s.key_positions, p);
    GuardedCall call;
    AttentionArgs args;
    args.spec = SpecOf(group_case);
    args.batch = packed ? p.batch : s.batch;
    args.q_heads = group.q_heads;
    args.kv_heads = group.kv_heads;
    args.tq = packed ? p.tq : s.tq;
    args.tk = packed ? p.tk : s.tk;
    args.head_dim = d;
    args.value_dim = dv;
    args.q = call.Input("q", packed ? p.q.data : HeadSlice(plan.q, group.q_head, group.q_heads, work.q_part));
    args.k = call.Input("k", packed ? p.k.data : HeadSlice(plan.k, group.kv_head, group.kv_heads, work.k_part));
    args.v = call.Input("v", packed ? p.v.data : HeadSlice(plan.v, group.kv_head, group.kv_heads, work.v_part));
    args.query_positions =
        call.Input("query_positions", std::span<const int>(packed ? p.query_positions : s.query_positions));
    args.key_positions = call.Input("key_positions", std::span<const int>(packed ? p.key_positions : s.key_positions));
    args.mask = DeclareMask(call, mask, c.mask);
    args.apply_positional = plan.apply_positional;
    args.apply_bias = plan.apply_bias;
    args.scale = c.effective_scale();
    args.current_length = plan.current_length;
    args.out = call.Output("out", static_cast<size_t>(args.batch) * group.q_heads * args.tq * dv);
    call.Run([&] { const AdapterTimer timer; adapter.attention(args); }, faults);
    if (packed) {
      Unpack(c, *mask.descriptor, args.out, adapter.capabilities().masked_rows, plan.v, run.out, run.unproduced);
    } else {
      Scatter(args.out, group.q_heads, s.tq, run.out, group.q_head, 0);
    }
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
  const MaskConvention used = convention.value_or(s.c.mask);
  if (std::optional<std::string> why = WhyFlagCannotExpressSteps(s, steps, used)) {
    throw std::invalid_argument("harness: " + *why);
  }
  const WorkspaceLease lease;
  Workspace& work = *lease;
  const Plan& plan = work.plan;
  MakePlan(adapter, s, used, work);
  work.plan.forms = SessionForms(plan.forms);
  const Case& c = plan.c;
  const int dv = c.value_dim, d = c.head_dim, past = s.tk - s.tq;
  AdapterRun run;
  run.out = TensorD(s.batch, c.q_heads, s.tq, dv);
  if (Unrepresentable(plan, run)) return run;
  CallFaults faults;

  // One case per head group (each session's SessionArgs::spec is taken from it).
  std::vector<Case> group_cases;
  for (const HeadGroup& group : plan.groups) group_cases.push_back(GroupCase(c, group));
  std::vector<std::unique_ptr<Session>> sessions;
  try {
    for (size_t g = 0; g < plan.groups.size(); ++g) {
      SessionArgs args;
      args.spec = SpecOf(group_cases[g]);
      args.batch = s.batch;
      args.q_heads = plan.groups[g].q_heads;
      args.kv_heads = plan.groups[g].kv_heads;
      args.head_dim = d;
      args.value_dim = dv;
      args.apply_positional = plan.apply_positional;
      args.apply_bias = plan.apply_bias;
      args.scale = c.effective_scale();
      args.current_length = plan.current_length;
      std::unique_ptr<Session> session;
      {
        const AdapterTimer timer;
        session = adapter.open_session(args);
      }
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
        TensorF& k = work.k_part;
        TensorF& v = work.v_part;
        std::vector<int>& positions = work.positions;
        Slice(plan.k, group.kv_head, group.kv_heads, t0, n, k);
        Slice(plan.v, group.kv_head, group.kv_heads, t0, n, v);
        SlicePositions(s.key_positions, s.batch, s.tk, t0, n, positions);
        GuardedCall call;
        const std::span<const float> k_buffer = call.Input("k", std::span<const float>(k.data));
        const std::span<const float> v_buffer = call.Input("v", std::span<const float>(v.data));
        const std::span<const int> position_buffer = call.Input("key_positions", std::span<const int>(positions));
        call.Run([&] {
          const AdapterTimer timer;
          sessions[g]->append(k_buffer, v_buffer, position_buffer, n);
        }, faults);
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
        TensorF& q = work.q_part;
        std::vector<int>& positions = work.positions;
        Slice(plan.q, group.q_head, group.q_heads, i0, nq, q);
        SlicePositions(s.query_positions, s.batch, s.tq, i0, nq, positions);
        const MaskBuffers& mask = work.step_mask;
        MakeMask(plan, s, group, i0, nq, keys, work.step_mask);
        GuardedCall call;
        const std::span<const float> q_buffer = call.Input("q", std::span<const float>(q.data));
        const std::span<const int> position_buffer = call.Input("query_positions", std::span<const int>(positions));
        const MaskArgs mask_args = DeclareMask(call, mask, c.mask);
        const std::span<float> out = call.Output("out", static_cast<size_t>(s.batch) * group.q_heads * nq * dv);
        call.Run([&] {
          const AdapterTimer timer;
          sessions[g]->attend(q_buffer, position_buffer, nq, mask_args, out);
        }, faults);
        Scatter(out, group.q_heads, nq, run.out, group.q_head, i0);
      }
      if (!faults.empty()) break;
    }
  } catch (...) {  // open_session threw, or the harness's own slicing did
    faults.RecordThrown();
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
  GuardedCall call;
  RopeArgs args;
  args.spec = SpecOf(c);
  args.batch = batch;
  args.heads = heads;
  args.tokens = tokens;
  args.head_dim = dim;
  args.x = call.Input("x", std::span<const float>(x_float.data));
  args.positions = call.Input("positions", positions);
  args.current_length = current_length;
  args.out = call.Output("out", x_float.size());
  CallFaults faults;
  call.Run([&] { const AdapterTimer timer; adapter.rope(args); }, faults);
  run.out = ToDouble(args.out, batch, heads, tokens, dim);
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

std::optional<std::string> WhySessionCannotExpress(const reference::Scenario& s, std::span<const int> steps,
                                                   MaskConvention convention) {
  if (std::optional<std::string> why = WhySessionCannotExpress(s, steps)) return why;
  return WhyFlagCannotExpressSteps(s, steps, convention);
}

double AdapterSeconds() { return adapter_seconds; }

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
