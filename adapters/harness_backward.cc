// The backward driver (harness.h RunBackward): one guarded adapter.backward call per
// head group on the same case as the forward, q and k encoded by the harness, the
// upstream gradient "dout" in (and the forward's "saved_out", "saved_lse" where declared), "dq", "dk", "dv"
// (and "lse" where declared) out. kv-head gradients of several groups (a head-dependent bias folded per query
// head) are summed. A varlen descriptor's call (DescriptorForms::varlen_backward) hands its tensors on the
// packed token axes, as the forward's.
#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "adapters/harness_internal.h"
#include "adapters/packing.h"
#include "reference/attention.h"
#include "reference/descriptor.h"

namespace attncheck {

using harness::AdapterTimer;
using harness::HeadGroup;
using harness::HeadSlice;
using harness::MaskBuffers;
using harness::Plan;
using harness::Scatter;
using harness::ToFloat;

std::optional<std::string> WhyBackwardUnsupported(const Adapter& adapter, const reference::Scenario& s,
                                                  MaskConvention convention) {
  const Capabilities caps = adapter.capabilities();
  if (!caps.has_backward) return std::string("adapter has no backward pass");
  if (std::optional<std::string> why = WhyUnsupported(adapter, s, convention)) return why;
  if (convention == MaskConvention::kDescriptor) {
    Case c = s.c;
    c.mask = convention;
    const std::optional<VisibilityDescriptor> d = reference::Describe(c, caps.descriptor_forms, nullptr);
    if (d && d->paged.page_size > 0) {
      return std::string("backward: a paged descriptor (no backward call takes pages)");
    }
    if (d && d->varlen() && !caps.descriptor_forms.varlen_backward) {
      return std::string("backward: a varlen descriptor, and the adapter's backward takes the padded layout only "
                         "(the varlen_backward form)");
    }
  }
  return std::nullopt;
}

namespace {

// What a correct forward of the case saves (BackwardArgs::saved_out, saved_lse): the
// reference's output rounded to the dtype, and its log-sum-exp in f32, +inf on a row
// with no visible key (FlashAttention's softmax_lse there).
void SavedForward(const reference::Scenario& s, Dtype dtype, TensorF& out, TensorF& lse) {
  const reference::AttentionResult forward = reference::Attention<double>(s);
  ToFloat(forward.out, dtype, out);
  lse = TensorF(forward.out.shape[0], forward.out.shape[1], forward.out.shape[2], 1);
  for (size_t row = 0; row < lse.data.size(); ++row) {
    const double value = forward.lse[row];
    lse.data[row] = std::isfinite(value) ? static_cast<float>(value) : std::numeric_limits<float>::infinity();
  }
}

}  // namespace

AdapterRun RunBackward(Adapter& adapter, const reference::Scenario& s, const TensorD& dout,
                       std::optional<MaskConvention> convention) {
  const harness::WorkspaceLease lease;
  harness::Workspace& work = *lease;
  const Plan& plan = work.plan;
  harness::MakePlan(adapter, s, convention.value_or(s.c.mask), work, /*harness_encodes=*/true);
  const Case& c = plan.c;
  const int d = c.head_dim, dv = c.value_dim;
  AdapterRun run;
  run.dq = TensorD(s.batch, c.q_heads, s.tq, d);
  run.dk = TensorD(s.batch, c.kv_heads, s.tk, d);
  run.dv = TensorD(s.batch, c.kv_heads, s.tk, dv);
  const bool lse = adapter.capabilities().backward_lse;
  if (lse) run.lse = TensorD(s.batch, c.q_heads, s.tq, 1);
  if (harness::Unrepresentable(plan, run)) return run;
  if (!adapter.capabilities().has_backward) {
    run.fault = "adapter has no backward pass";
    return run;
  }
  ToFloat(dout, c.dtype, work.dout);
  const bool saved = adapter.capabilities().backward_saved;
  TensorF saved_out, saved_lse, saved_out_part, saved_lse_part;
  if (saved) SavedForward(s, c.dtype, saved_out, saved_lse);
  CallFaults faults;
  for (const HeadGroup& group : plan.groups) {
    const MaskBuffers& mask = harness::WholeMask(plan, s, group, work);
    // A varlen descriptor packs the tokens as the forward does (adapters/packing.h;
    // descriptors never fold a bias, so the group holds every head); a paged one has
    // no backward (WhyBackwardUnsupported).
    const bool packed = mask.descriptor && NeedsPacking(*mask.descriptor, c);
    // A padded batch with its keys moved to slot 0 (reference::KeysCompacted): only
    // the key axis moves; the query rows are handed and read back as they are.
    const bool compacted = packed && reference::KeysCompacted(*mask.descriptor, c);
    if (packed && mask.descriptor->paged.page_size > 0) {
      throw std::invalid_argument("harness: a backward call with a paged descriptor (WhyBackwardUnsupported)");
    }
    if (packed && (group.q_heads != c.q_heads || group.kv_heads != c.kv_heads)) {
      throw std::invalid_argument("harness: a varlen backward call with a group of heads (no descriptor folds a bias)");
    }
    GuardedCall call;
    BackwardArgs args;
    args.forward = harness::DeclareCall(call, plan, s, group, mask, packed, work);
    args.forward.apply_positional = false;  // encoded by the harness (MakePlan's harness_encodes)
    // The query rows handed over: sliced to the group's heads, or packed on the token axis.
    const auto query_rows = [&](const char* name, const TensorF& rows, TensorF& part) {
      if (!packed || compacted) return call.Input(name, HeadSlice(rows, group.q_head, group.q_heads, part));
      PackQueryRows(c, rows, part);
      return call.Input(name, std::span<const float>(part.data));
    };
    args.dout = query_rows("dout", work.dout, work.dout_part);
    if (saved) {  // as dout
      args.saved_out = query_rows("saved_out", saved_out, saved_out_part);
      args.saved_lse = query_rows("saved_lse", saved_lse, saved_lse_part);
    }
    const size_t nb = args.forward.batch, nq = args.forward.tq, nk = args.forward.tk;
    args.dq = call.Output("dq", nb * group.q_heads * nq * d);
    args.dk = call.Output("dk", nb * group.kv_heads * nk * d);
    args.dv = call.Output("dv", nb * group.kv_heads * nk * dv);
    if (lse) args.lse = call.Output("lse", nb * group.q_heads * nq);
    call.Run([&] { const AdapterTimer timer; adapter.backward(args); }, faults);
    if (compacted) {
      Scatter(args.dq, group.q_heads, s.tq, run.dq, group.q_head, 0);
      UncompactKeyRows(c, *mask.descriptor, args.dk, run.dk);
      UncompactKeyRows(c, *mask.descriptor, args.dv, run.dv);
      if (lse) Scatter(args.lse, group.q_heads, s.tq, run.lse, group.q_head, 0);
    } else if (packed) {  // pad queries and pad keys: no gradient; a pad query's lse that of a row with no key
      if (lse) std::fill(run.lse.data.begin(), run.lse.data.end(), -std::numeric_limits<double>::infinity());
      UnpackRows(c, /*keys=*/false, args.dq, run.dq);
      UnpackRows(c, /*keys=*/true, args.dk, run.dk);
      UnpackRows(c, /*keys=*/true, args.dv, run.dv);
      if (lse) UnpackRows(c, /*keys=*/false, args.lse, run.lse);
    } else {
      Scatter(args.dq, group.q_heads, s.tq, run.dq, group.q_head, 0);
      Scatter(args.dk, group.kv_heads, s.tk, run.dk, group.kv_head, 0, /*accumulate=*/true);
      Scatter(args.dv, group.kv_heads, s.tk, run.dv, group.kv_head, 0, /*accumulate=*/true);
      if (lse) Scatter(args.lse, group.q_heads, s.tq, run.lse, group.q_head, 0);
    }
    if (!faults.empty()) break;
  }
  harness::Finish(run, faults);
  return run;
}

}  // namespace attncheck
