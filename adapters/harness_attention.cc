// The attention driver (harness.h RunAttention): one guarded adapter.attention
// call per head group, in the plan's convention and layout (padded, or varlen and
// paged as adapters/packing.h lays them out). Also the harness's shared run ending
// (Finish, Unrepresentable) and the adapter-time counter.
#include <fmt/format.h>
#include <stdexcept>

#include "adapters/harness_internal.h"

namespace attncheck {

namespace harness {

thread_local double adapter_seconds = 0.0;

namespace {

std::string Join(const std::vector<std::string>& faults) {
  std::string joined;
  for (const std::string& f : faults) joined += (joined.empty() ? "" : "; ") + f;
  return joined;
}

}  // namespace

// The run's fault text and class: a fault nobody classified broke the buffer contract.
void Finish(AdapterRun& run, const CallFaults& faults) {
  run.fault = Join(faults.messages);
  run.kind = faults.thrown;
  if (!run.fault.empty() && run.kind == AdapterFault::kNone) run.kind = AdapterFault::kContract;
}

// A plan whose inputs cannot be handed over ends the run as a refusal (a skip with
// the reason, properties/law_support.h), without calling the adapter.
bool Unrepresentable(const Plan& plan, AdapterRun& run) {
  if (plan.unrepresentable.empty()) return false;
  run.kind = AdapterFault::kRefused;
  run.fault = "refused by the harness: " + plan.unrepresentable;
  return true;
}

AttentionArgs DeclareCall(GuardedCall& call, const Plan& plan, const reference::Scenario& s, const HeadGroup& group,
                          const MaskBuffers& mask, bool packed, Workspace& work) {
  const Case& c = plan.c;
  // The plan's case itself when the group holds every head (no copy).
  const bool every_head = group.q_heads == c.q_heads && group.kv_heads == c.kv_heads;
  PackedCall& p = work.packed;
  if (packed) Pack(c, *mask.descriptor, plan.q, plan.k, plan.v, s.query_positions, s.key_positions, p);
  AttentionArgs args;
  const std::optional<Case> own_case = every_head ? std::nullopt : std::optional<Case>(GroupCase(c, group));
  args.spec = SpecOf(every_head ? c : *own_case);
  args.batch = packed ? p.batch : s.batch;
  args.q_heads = group.q_heads;
  args.kv_heads = group.kv_heads;
  args.tq = packed ? p.tq : s.tq;
  args.tk = packed ? p.tk : s.tk;
  args.head_dim = c.head_dim;
  args.value_dim = c.value_dim;
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
  return args;
}

}  // namespace harness

using harness::AdapterTimer;
using harness::DeclareCall;
using harness::Finish;
using harness::HeadGroup;
using harness::MakePlan;
using harness::MaskBuffers;
using harness::Plan;
using harness::Scatter;
using harness::Unrepresentable;
using harness::WholeMask;
using harness::Workspace;
using harness::WorkspaceLease;

AdapterRun RunAttention(Adapter& adapter, const reference::Scenario& s, std::optional<MaskConvention> convention) {
  const WorkspaceLease lease;
  Workspace& work = *lease;
  const Plan& plan = work.plan;
  MakePlan(adapter, s, convention.value_or(s.c.mask), work);
  const Case& c = plan.c;
  const int dv = c.value_dim;
  AdapterRun run;
  run.out = TensorD(s.batch, c.q_heads, s.tq, dv);
  if (Unrepresentable(plan, run)) return run;
  CallFaults faults;

  for (const HeadGroup& group : plan.groups) {
    const MaskBuffers& mask = WholeMask(plan, s, group, work);
    // A varlen or paged descriptor takes its own tensor layout (adapters/packing.h);
    // descriptors never fold a bias, so the group holds every head.
    const bool packed = mask.descriptor && NeedsPacking(*mask.descriptor, c);
    GuardedCall call;
    AttentionArgs args = DeclareCall(call, plan, s, group, mask, packed, work);
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

const TensorD& AdapterRun::tensor(std::string_view name) const {
  if (name == "out") return out;
  if (name == "dq") return dq;
  if (name == "dk") return dk;
  if (name == "dv") return dv;
  if (name == "lse") return lse;
  throw std::invalid_argument(fmt::format("no tensor named '{}' in an adapter run", name));
}

double AdapterSeconds() { return harness::adapter_seconds; }

}  // namespace attncheck
