// Internal to the harness (adapters/harness.h), split by job: the conversion of
// tensors to what adapters receive (harness_convert.cc), the plan of one run with
// its masks and their caches (harness_plan.cc), what a convention or a session can
// express (harness_express.cc), and one driver per call (harness_attention.cc,
// harness_session.cc, harness_rope.cc, harness_backward.cc). A new call is a new
// driver over these.
#pragma once

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "adapters/guarded_call.h"
#include "adapters/harness.h"
#include "adapters/packing.h"
#include "reference/tensor.h"

namespace attncheck::harness {

// Seconds this thread spent inside adapter calls (AdapterSeconds()).
extern thread_local double adapter_seconds;

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
// Inputs as handed to adapters: float, representable in the case dtype
// (harness_convert.cc).

// to[e] = float(from[e]) (round to nearest); to[e] = double(from[e]) (exact).
void Narrow(const double* from, size_t n, float* to);
void Widen(const float* from, size_t n, double* to);
// Into `f`, whose storage is reused (the harness keeps it per thread: no allocation per call).
void ToFloat(const TensorD& t, Dtype dtype, TensorF& f);
TensorF ToFloat(const TensorD& t, Dtype dtype);
TensorD ToDouble(std::span<const float> values, int n0, int n1, int n2, int n3);
// s = t[:, h0:h0+nh, t0:t0+nt, :] (s's storage reused)
void Slice(const TensorF& t, int h0, int nh, int t0, int nt, TensorF& s);
// t[:, h0:h0+nh, :, :] as one span: t itself when the group has every head, else
// a copy in `scratch`.
std::span<const float> HeadSlice(const TensorF& t, int h0, int nh, TensorF& scratch);
// s = positions[:, t0:t0+nt] of a [B, T] array (s's storage reused)
void SlicePositions(const std::vector<int>& positions, int batch, int t, int t0, int nt, std::vector<int>& s);
// Copies a group's output [B, nh, nq, Dv] into out[:, h0:h0+nh, i0:i0+nq, :];
// `accumulate` adds instead (kv-head gradients of several query-head groups).
void Scatter(std::span<const float> part, int nh, int nq, TensorD& out, int h0, int i0, bool accumulate = false);

// ---------------------------------------------------------------------------
// The plan of one run, its masks and their caches (harness_plan.cc).

// A group of query heads run in one adapter call, with the kv heads they read.
// Normally one group holds every head; a head-dependent score bias the adapter
// does not own is folded into the (head-less) mask one query head at a time.
struct HeadGroup {
  int q_head = 0, q_heads = 0;    // query heads [q_head, q_head + q_heads)
  int kv_head = 0, kv_heads = 0;  // kv heads [kv_head, kv_head + kv_heads)
  int bias_head = 0;              // the head whose bias the group's mask carries
};

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
  TensorF dout, dout_part;         // the backward's upstream gradient as handed over, a group's slice
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
  WorkspaceLease();
  ~WorkspaceLease() { workspace_->busy = false; }
  WorkspaceLease(const WorkspaceLease&) = delete;
  WorkspaceLease& operator=(const WorkspaceLease&) = delete;
  Workspace& operator*() const { return *workspace_; }

 private:
  Workspace* workspace_ = nullptr;
  std::unique_ptr<Workspace> own_;
};

// Fills work.plan (its storage reused): which stages the harness runs, q, k, v as
// handed over, the head groups.
// harness_encodes: q and k are encoded by the harness even for an adapter that owns
// the positional stage (the backward call).
void MakePlan(const Adapter& adapter, const reference::Scenario& s, MaskConvention convention, Workspace& work,
              bool harness_encodes = false);
// The mask of query rows [i0, i0 + nq) over keys [0, keys) in the plan's
// convention, with the group's bias folded in where the plan says so, into `mask`
// (its storage reused).
void MakeMask(const Plan& plan, const reference::Scenario& s, const HeadGroup& group, int i0, int nq, int keys,
              MaskBuffers& mask);
// MakeMask over every query row and key, from the workspace's cache when nothing
// it depends on changed.
const MaskBuffers& WholeMask(const Plan& plan, const reference::Scenario& s, const HeadGroup& group, Workspace& work);
// The mask handed over in `convention`, declared as the call's input "mask"
// (`mask` must outlive the call); causal-flag conventions carry no tensor.
MaskArgs DeclareMask(GuardedCall& call, const MaskBuffers& mask, MaskConvention convention);
Case GroupCase(const Case& c, const HeadGroup& group);

// The arguments of one head group's attention call (harness_attention.cc), every
// tensor declared as an input of `call`, in the group's layout: the plan's padded
// tensors, or the varlen/paged layout packed into work.packed when `packed`. out is
// left for the driver to declare.
AttentionArgs DeclareCall(GuardedCall& call, const Plan& plan, const reference::Scenario& s, const HeadGroup& group,
                          const MaskBuffers& mask, bool packed, Workspace& work);

// The run's fault text and class: a fault nobody classified broke the buffer contract.
void Finish(AdapterRun& run, const CallFaults& faults);
// A plan whose inputs cannot be handed over ends the run as a refusal (a skip with
// the reason, properties/law_support.h), without calling the adapter.
bool Unrepresentable(const Plan& plan, AdapterRun& run);

// The decode drivers' shared plan checks and slicing (harness_session.cc,
// harness_stepped.cc): steps that do not sum to Tk or are negative throw
// std::invalid_argument (a harness bug); a step appending n slots to `cached` ones
// asks the query rows [i0, i1) among them (a suffix of the step; none when i1 ≤ i0).
void CheckDecodeSteps(std::span<const int> steps, int tk);
struct StepQueries {
  int i0 = 0, i1 = 0;
  int count() const { return i1 - i0; }  // ≤ 0: none
};
StepQueries QueriesOfStep(const reference::Scenario& s, int cached, int n);

// Why causal flag `convention` is not the scenario's visibility in some session
// step (harness_express.cc); nullopt for every other convention.
std::optional<std::string> WhyFlagCannotExpressSteps(const reference::Scenario& s, std::span<const int> steps,
                                                     MaskConvention convention);

}  // namespace attncheck::harness
