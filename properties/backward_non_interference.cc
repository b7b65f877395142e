// backward-non-interference (DESIGN §6, the backward pass): the gradient a kernel's
// backward gives keys and values respects the visibility, exactly.
//   (a) with upstream gradient only on rows whose visible keys all lie among an
//       anchor row's, every key the anchor cannot see gets dK = dV = 0 exactly (no
//       row that carries gradient may read it): the mask applied in the forward
//       and forgotten in the backward, a window or a causal diagonal shifted in the
//       backward only;
//   (b) perturbing the keys and values the anchor cannot see leaves dQ unchanged on
//       every row that cannot see them either: bitwise, but for the sign of a zero.
// Rounds over anchors as non-interference's: the row that sees least first, then
// spread over the distinct visible sets. Covers causal (both alignments), padding,
// documents, prefix, windows, chunks and Tq > Tk.
#include <cmath>
#include <fmt/format.h>
#include <optional>

#include "properties/backward_support.h"
#include "properties/influence.h"
#include "properties/law_run.h"
#include "properties/law_support.h"

namespace attncheck {

using reference::Scenario;

Verdict check_backward_non_interference(Adapter& adapter, const Case& c, const Options& options) {
  LawRun law(check_backward_non_interference, adapter);
  if (!law.Open(c)) return law.stop();
  const Scenario& s = law.scenario();
  const AdapterRun& base = law.base();
  const double magnitude = PerturbationMagnitude(s, law.convention());
  std::vector<std::vector<int>> anchors(s.batch);
  size_t rounds = 1;
  for (int b = 0; b < s.batch; ++b) {
    anchors[b] = DistinctVisibleRows(s, b);
    rounds = std::max(rounds, anchors[b].size());
  }
  rounds = std::min<size_t>(rounds, static_cast<size_t>(options.perturbations) + 2);
  // dq of a row that sees no perturbed key sums the same terms in both runs: by value, or
  // within a run-dependent summation order's rounding (backward_deterministic false)
  const SummationOrder order(adapter.capabilities(), s, law.upstream());

  for (size_t round = 0; round < rounds; ++round) {
    std::vector<int> anchor(s.batch);
    for (int b = 0; b < s.batch; ++b) anchor[b] = AnchorFor(anchors[b], static_cast<int>(round), c.seed);
    // (a) gradient only on rows inside the anchor's view
    TensorD dout = law.upstream();
    std::vector<uint8_t> outside(static_cast<size_t>(s.batch) * s.tq, 0);
    for (int b = 0; b < s.batch; ++b)
      for (int i = 0; i < s.tq; ++i) outside[RowIndex(s, b, i)] = !VisibleWithin(s, b, i, anchor[b]);
    ZeroRows(dout, outside);
    const std::optional<AdapterRun> inside = law.Backward(s, dout, " (gradient on rows inside an anchor's view)");
    if (!inside) return law.stop();
    for (int b = 0; b < s.batch; ++b)
      for (int j = 0; j < s.tk; ++j) {
        if (anchor[b] >= 0 && s.is_visible(b, anchor[b], j)) continue;
        const std::optional<WorstElement> leak = NonZeroKeyGradient(*inside, b, j);
        if (!leak) continue;
        Verdict v = Verdict::Fail(
            fmt::format("key slot {} of row {} got gradient {}[kv={}, d={}] = {:.9g} although only rows that cannot "
                        "see it carry upstream gradient (anchor query {}): the backward reads a key the mask blocks",
                        j, b, leak->tensor, leak->h, leak->j, leak->got, anchor[b]),
            *leak, std::abs(leak->got));
        v.At("gradient to keys no gradient-carrying row may see", Role::kLeak);
        v.expected_visibility = s.visible;
        return v;
      }
    // (b) dq ignores keys it cannot see
    Scenario perturbed = s;
    std::vector<uint8_t> hidden(static_cast<size_t>(s.batch) * s.tk, 0);
    for (int b = 0; b < s.batch; ++b)
      for (int j = 0; j < s.tk; ++j) {
        if (anchor[b] >= 0 && s.is_visible(b, anchor[b], j)) continue;
        hidden[static_cast<size_t>(b) * s.tk + j] = 1;
        PerturbKey(perturbed, b, j, magnitude, static_cast<int>(round));
      }
    const std::optional<AdapterRun> run = law.BackwardPerturbed(perturbed, law.upstream(), " (keys a row cannot see perturbed)");
    if (!run) return law.stop();
    for (int b = 0; b < s.batch; ++b)
      for (int i = 0; i < s.tq; ++i) {
        bool sees_hidden = false;
        for (int j = 0; j < s.tk && !sees_hidden; ++j) sees_hidden = hidden[static_cast<size_t>(b) * s.tk + j] && s.is_visible(b, i, j);
        if (sees_hidden) continue;
        const std::optional<WorstElement> diff = DqValueDifference(run->dq, base.dq, b, i, order);
        if (!diff) continue;
        Verdict v = Verdict::Fail(
            fmt::format("dq of query (b={}, i={}) changed when keys it cannot see were perturbed by ±{:g}: "
                        "dq[h={}, d={}] = {:.9g}, was {:.9g}{}",
                        b, i, magnitude, diff->h, diff->j, diff->got, diff->want, BeyondOrder(*diff)),
            *diff, diff->error);
        v.At("blocked keys perturbed (dq)", Role::kLeak);
        v.expected_visibility = s.visible;
        return v;
      }
  }
  return Verdict::Pass();
}

}  // namespace attncheck
