// The plan of one harness run (harness_internal.h): which stages the harness runs
// for the adapter, q, k and v as handed over, the head groups, and the mask in the
// adapter's convention with the caches that spare rebuilding it.
#include <algorithm>
#include <fmt/format.h>
#include <stdexcept>
#include <utility>

#include "adapters/harness_internal.h"
#include "reference/attention.h"
#include "reference/data.h"
#include "reference/declared_attention.h"
#include "reference/descriptor.h"
#include "reference/mask.h"
#include "reference/positional.h"

namespace attncheck::harness {
namespace {

bool HeadDependentBias(const TensorD& bias) {
  const int batch = bias.shape[0], heads = bias.shape[1], tq = bias.shape[2], tk = bias.shape[3];
  for (int b = 0; b < batch; ++b)
    for (int h = 1; h < heads; ++h)
      for (int i = 0; i < tq; ++i)
        for (int j = 0; j < tk; ++j)
          if (bias.at(b, h, i, j) != bias.at(b, 0, i, j)) return true;
  return false;
}

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

// Why the case's scores cannot be computed in the dtype the adapter declares for
// them (caps.accuracy): a visible score of the declared model not finite
// (reference::FirstScoreOverflow; f16 scores past 65504, the F15 class's
// counterpart for q·k). Empty when every one is. encoded_q/k: q, k as encoded,
// or empty (computed here when needed).
std::string ScoreOverflowReason(const reference::Scenario& s, const Capabilities& caps, const Plan& plan,
                                TensorD& encoded_q, TensorD& encoded_k) {
  const Accuracy& accuracy = caps.accuracy;
  if (!reference::ScoresMayOverflow(accuracy, s.c.dtype)) return {};  // before encoding anything
  if (encoded_q.data.empty()) reference::EncodeQk(s, encoded_q, encoded_k);
  const std::shared_ptr<const TensorD> bias =
      plan.fold_bias ? plan.bias : plan.apply_bias ? reference::SharedBiasTensor(s) : nullptr;
  const std::optional<reference::ScoreOverflow> over = reference::FirstScoreOverflow(
      encoded_q, encoded_k, s.visible, bias.get(), s.c.effective_scale(), s.c.softcap, s.c.dtype, accuracy);
  if (!over) return {};
  return fmt::format("the score S[b={}, h={}, i={}, j={}] = {:g} of a visible key overflows {}, in which the "
                     "adapter declares its scores ({}): not representable (the kernel cannot compute the case as "
                     "it declares)",
                     over->b, over->h, over->i, over->j, over->exact, Name(Dtype::kF16), Describe(accuracy));
}

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

}  // namespace

WorkspaceLease::WorkspaceLease() {
  thread_local Workspace workspace;
  if (workspace.busy) {
    own_ = std::make_unique<Workspace>();
    workspace_ = own_.get();
  } else {
    workspace_ = &workspace;
  }
  workspace_->busy = true;
}

void MakePlan(const Adapter& adapter, const reference::Scenario& s, MaskConvention convention, Workspace& work,
              bool harness_encodes) {
  ScopeWorkspace(adapter, s.c, work);
  Plan& plan = work.plan;
  ResetPlan(plan);
  plan.c = s.c;
  plan.c.mask = convention;
  const Capabilities caps = adapter.capabilities();
  plan.forms = caps.descriptor_forms;
  const Case& c = plan.c;
  const Dtype dtype = c.dtype;
  plan.current_length = s.length_seen();

  TensorD encoded_q, encoded_k;  // filled where the harness encodes, or for ScoreOverflowReason
  if (caps.owns_rope && !harness_encodes) {
    plan.apply_positional = reference::HasQkEncoding(c);
    ToFloat(s.q, dtype, plan.q);
    ToFloat(s.k, dtype, plan.k);
  } else {
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
  if (plan.unrepresentable.empty()) plan.unrepresentable = ScoreOverflowReason(s, caps, plan, encoded_q, encoded_k);
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
        *to++ = row[j] != 0 ? static_cast<float>(reference::HandedBias(plan.c.dtype, bias[j])) : fill;
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

Case GroupCase(const Case& c, const HeadGroup& group) {
  Case g = c;
  g.q_heads = group.q_heads;
  g.kv_heads = group.kv_heads;
  return g;
}

}  // namespace attncheck::harness
