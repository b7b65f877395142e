// The cached-decode driver (harness.h RunSession): a session per head group, the
// key slots appended in steps, each step's queries attending to the keys so far
// with the step's own mask, every call guarded.
#include <fmt/format.h>
#include <stdexcept>

#include "adapters/harness_internal.h"
#include "reference/descriptor.h"

namespace attncheck {

using harness::AdapterTimer;
using harness::CheckDecodeSteps;
using harness::DeclareMask;
using harness::Finish;
using harness::GroupCase;
using harness::HeadGroup;
using harness::MakeMask;
using harness::MakePlan;
using harness::MaskBuffers;
using harness::Plan;
using harness::QueriesOfStep;
using harness::Scatter;
using harness::Slice;
using harness::StepQueries;
using harness::SlicePositions;
using harness::Unrepresentable;
using harness::WhyFlagCannotExpressSteps;
using harness::Workspace;
using harness::WorkspaceLease;

AdapterRun RunSession(Adapter& adapter, const reference::Scenario& s, std::span<const int> steps,
                      std::optional<MaskConvention> convention) {
  CheckDecodeSteps(steps, s.tk);
  const MaskConvention used = convention.value_or(s.c.mask);
  if (std::optional<std::string> why = WhyFlagCannotExpressSteps(s, steps, used)) {
    throw std::invalid_argument("harness: " + *why);
  }
  const WorkspaceLease lease;
  Workspace& work = *lease;
  const Plan& plan = work.plan;
  MakePlan(adapter, s, used, work);
  work.plan.forms = SessionForms(plan.forms);
  // The session's cache is a padded batch whatever layout one call of the case takes
  // (reference::StepCase): its steps and a whole-case step alike.
  if (plan.c.mask == MaskConvention::kDescriptor) {
    work.plan.c.layout = DescriptorLayout::kPadded;
    work.plan.c.page_size = 0;
  }
  const Case& c = plan.c;
  const int dv = c.value_dim, d = c.head_dim;
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
      const StepQueries queries = QueriesOfStep(s, t0, n);
      const int keys = t0 + n;
      t0 = keys;
      if (!faults.empty()) break;
      const int i0 = queries.i0, nq = queries.count();
      if (nq <= 0) continue;
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

}  // namespace attncheck
