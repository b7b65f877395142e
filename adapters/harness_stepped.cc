// The caller-owned-cache decode driver (harness.h RunCallerCacheDecode): each decode
// step is one adapter.attention call over the keys so far, handed in the case's own
// descriptor layout (varlen: cu_seqlens_k of the keys so far; paged: their pages,
// shuffled afresh, as a serving engine's block table grows), the way
// flash_attn_with_kvcache and flash_attn_varlen_func decode. Each step is a scenario
// of its own (reference::StepCase with StepCache::kCaller) carrying the case's
// tokens, run by RunAttention, so it is guarded, packed and unpacked as one call is.
#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <optional>
#include <stdexcept>
#include <string>

#include "adapters/harness.h"
#include "adapters/harness_internal.h"
#include "reference/descriptor.h"

namespace attncheck {

AdapterRun RunCallerCacheDecode(Adapter& adapter, const reference::Scenario& s, std::span<const int> steps) {
  harness::CheckDecodeSteps(steps, s.tk);
  if (s.c.mask != MaskConvention::kDescriptor) {
    throw std::invalid_argument("harness: a caller-owned cache is handed over in the descriptor convention only");
  }
  AdapterRun run;
  run.out = TensorD(s.batch, s.c.q_heads, s.tq, s.c.value_dim);
  int keys = 0;
  for (const int n : steps) {
    const harness::StepQueries queries = harness::QueriesOfStep(s, keys, n);
    keys += n;
    const int i0 = queries.i0, nq = queries.count();
    if (nq <= 0) continue;
    reference::Scenario step =
        reference::MakeScenario(reference::StepCase(s.c, keys, nq, reference::StepCache::kCaller), &s);
    step.current_length = s.length_seen();  // a dynamic scaling sees the whole sequence, as a session is told
    // A kernel that takes the whole case may not take a step of it (a causal step over
    // cached keys is bottom-right; Pallas mha's causal is top-left only): a refusal, a
    // skip with the reason, as a session step's (harness_session.cc) is.
    if (const std::optional<std::string> why = WhyUnsupported(adapter, step, MaskConvention::kDescriptor)) {
      run.kind = AdapterFault::kRefused;
      run.fault = fmt::format("refused: decode step of {} queries over {} cached keys: {}", nq, keys, *why);
      return run;
    }
    AdapterRun part = RunAttention(adapter, step, MaskConvention::kDescriptor);
    if (!part.ok()) {
      part.fault = fmt::format("decode step of {} queries over {} cached keys: {}", nq, keys, part.fault);
      part.out = std::move(run.out);
      return part;
    }
    for (int b = 0; b < s.batch; ++b)
      for (int h = 0; h < s.c.q_heads; ++h)
        for (int i = 0; i < nq; ++i)
          std::copy_n(&part.out.at(b, h, i, 0), s.c.value_dim, &run.out.at(b, h, i0 + i, 0));
    if (!part.unproduced.empty()) {
      if (run.unproduced.empty()) run.unproduced.assign(static_cast<size_t>(s.batch) * s.tq, 0);
      for (int b = 0; b < s.batch; ++b)
        for (int i = 0; i < nq; ++i)
          run.unproduced[static_cast<size_t>(b) * s.tq + i0 + i] = part.unproduced[static_cast<size_t>(b) * nq + i];
    }
  }
  return run;
}

}  // namespace attncheck
