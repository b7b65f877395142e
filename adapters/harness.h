// The harness side of the adapter contract (DESIGN §5): it runs the reference for
// stages an adapter does not own, converts the visibility into the adapter's
// declared mask convention, and hands every buffer over inside NaN-filled guard
// margins. A write outside the output, an unwritten output element, a change to
// an input or an exception is reported in AdapterRun::fault — a failure of its own.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/adapter.h"
#include "adapters/adapter_fault.h"
#include "reference/scenario.h"
#include "reference/tensor.h"

namespace attncheck {

// Why the adapter cannot run this case: a capability it lacks (dtype, mask
// convention, encoding, RoPE layout or scaling, GQA, softcap, Dv ≠ D, session)
// or its own unsupported(); nullopt when it can.
std::optional<std::string> WhyUnsupported(const Adapter& adapter, const Case& c);
// The same, plus what only the concrete scenario shows (a causal-flag convention
// cannot express padding, documents or a non-causal task; a bool convention cannot
// carry a score bias the adapter does not own).
std::optional<std::string> WhyUnsupported(const Adapter& adapter, const reference::Scenario& s,
                                          MaskConvention convention);
// How far every score of the scenario may still move (blocked keys up, visible keys
// down) before `convention`'s finite fill stops blocking a key for a kernel that adds
// the fill to the score: in each row that sees a key, every key it does not see must
// score less than |fill| − 128 − 4 unit roundoffs of the magnitudes in play above the
// row's best visible key (WhyUnsupported refuses a scenario where it does not). ≤ 0
// when the fill already cannot block; +inf for a flag, a bool mask, an infinite fill or
// no row that both sees and blocks a key. A law that perturbs keys keeps its score
// changes under it (properties/law_support.h PerturbationMagnitude) and skips a
// perturbed run where it is still ≤ 0 (WhyPerturbedFillCannotBlock).
double FillHeadroom(const reference::Scenario& s, MaskConvention convention);

// The outcome of one harness run, its named tensors widened to double: "out" of
// the forward calls, "dq", "dk", "dv" of the backward (DESIGN §5).
struct AdapterRun {
  TensorD out;        // [B, Hq, Tq, Dv] (or [B, H, T, D] for RunRope), widened to double
  TensorD dq;         // RunBackward: [B, Hq, Tq, D]
  TensorD dk;         // RunBackward: [B, Hkv, Tk, D]
  TensorD dv;         // RunBackward: [B, Hkv, Tk, Dv]
  TensorD lse;        // RunBackward with Capabilities::backward_lse: [B, Hq, Tq, 1], else empty
  std::string fault;  // non-empty when the adapter broke the buffer contract or threw
  // what kind of fault: kContract (guard margins, inputs, unwritten output: a
  // law failure) or an adapter error (threw, crashed, hung, answered garbage)
  AdapterFault kind = AdapterFault::kNone;
  // [B, Tq], or empty when every row is: 1 where the kernel produced no output and
  // the harness wrote the declared masked-row value (a pad query in no varlen sequence)
  std::vector<uint8_t> unproduced;
  bool ok() const { return fault.empty(); }
  // The tensor named `name` ("out", "dq", "dk", "dv", "lse"); throws std::invalid_argument for another.
  const TensorD& tensor(std::string_view name) const;
};

// adapter.attention on the scenario, mask in `convention` (default: the case's).
AdapterRun RunAttention(Adapter& adapter, const reference::Scenario& s,
                        std::optional<MaskConvention> convention = std::nullopt);

// A cached-decode session over the scenario: the key slots are appended in steps
// of the given sizes (Σ steps = Tk); after each append, the query slots among the
// appended ones attend to every key so far (mask rows restricted to those keys).
// Output [B, Hq, Tq, Dv] assembled from the steps. Mask in `convention` (default:
// the case's). A causal flag means in a step what it means in one call, over the
// step's tq queries and the keys so far (include/attncheck/adapter.h): top-left
// j ≤ i, bottom-right j ≤ i + keys − tq. A flag whose rule is not the scenario's
// visibility in some step throws std::invalid_argument (a harness bug: the law
// chooses the convention with WhySessionCannotExpress).
AdapterRun RunSession(Adapter& adapter, const reference::Scenario& s, std::span<const int> steps,
                      std::optional<MaskConvention> convention = std::nullopt);

// Cached decode over a cache the caller owns (a serving engine's paged or varlen KV
// cache, as flash_attn_with_kvcache takes it): for each step, one adapter.attention
// call of the step's queries over every key so far, in the descriptor convention
// and the case's own layout and page size (reference::StepCache::kCaller). Output and
// `unproduced` as RunAttention's, assembled from the steps; a step's fault ends the
// run, its text naming the step. The case's convention must be the descriptor.
AdapterRun RunCallerCacheDecode(Adapter& adapter, const reference::Scenario& s, std::span<const int> steps);

// Why a session in these steps cannot reproduce the scenario's one-shot output:
// some query reads a key appended in a later step (bidirectional visibility, a
// prefix-LM prefix spanning steps); nullopt when every query's keys are present.
std::optional<std::string> WhySessionCannotExpress(const reference::Scenario& s, std::span<const int> steps);
// The same, and in `convention`: a causal flag must give every step's visibility.
std::optional<std::string> WhySessionCannotExpress(const reference::Scenario& s, std::span<const int> steps,
                                                   MaskConvention convention);

// adapter.backward on the scenario with the upstream gradient dout [B, Hq, Tq, Dv]
// (include "adapters/adapter.h" BackwardArgs): run.dq, run.dk and run.dv. q and k
// are handed encoded by the harness whatever the adapter owns (the gradients are
// those of the attention core); the score bias as for RunAttention. Mask in
// `convention` (default: the case's); ask WhyBackwardUnsupported first.
AdapterRun RunBackward(Adapter& adapter, const reference::Scenario& s, const TensorD& dout,
                       std::optional<MaskConvention> convention = std::nullopt);
// Why the backward call cannot run the scenario in `convention`: the adapter has no
// backward, WhyUnsupported's reasons, a paged descriptor (no backward call takes
// pages), or a varlen one where the adapter's backward takes the padded layout only
// (DescriptorForms::varlen_backward); nullopt when it can.
std::optional<std::string> WhyBackwardUnsupported(const Adapter& adapter, const reference::Scenario& s,
                                                  MaskConvention convention);

// adapter.rope on x [B, H, T, D] at positions [B, T].
AdapterRun RunRope(Adapter& adapter, const Case& c, const TensorD& x, std::span<const int> positions,
                   int current_length);

// Wall-clock seconds this thread has spent inside the adapter calls made above
// (attention, session open/append/attend, rope), summed since the thread began:
// bench reads it around each check to report the share spent in the adapter.
double AdapterSeconds();

// The case's decode plan as session steps: {Tk} for a full prefill, else
// {Tk − Σchunks, c1, c2, …} (a zero-length prefill is dropped).
std::vector<int> SessionSteps(const Case& c);

}  // namespace attncheck
