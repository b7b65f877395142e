// backward-packed-isolation (DESIGN §6, the backward pass): a document packed with
// others gets the gradients it gets alone, and nothing of another document reaches them.
//   (1) each document alone in a row of its own (positions reset per document, as
//       packed-isolation's), under the same dO rows: its dq rows and its key slots'
//       dk, dv equal the packed call's within the gradient tolerance model (2·bound,
//       both sides rounded). Not bitwise, for the reason packed-isolation's (1) is
//       not: the call alone has another shape (Tq, Tk, batch), so a kernel blocks,
//       orders and skips its sums differently; the values agree, the roundings need not;
//   (2) changing every other document of the row (its keys, values and upstream
//       gradient) leaves the document's dq rows and its keys' dk, dv unchanged:
//       the same call shape, so by value (but for the sign of a zero), as
//       backward-non-interference's (b). A backward that lets gradient cross a
//       document boundary (a block-sparse backward with another document's block
//       read, dK summed over every query of the row) fails here.
#include <fmt/format.h>

#include "properties/backward_support.h"
#include "properties/law_run.h"
#include "properties/law_support.h"
#include "reference/data.h"

namespace attncheck {
namespace {

using reference::Scenario;

Verdict Crossed(const Scenario& s, const DocumentSpan& span, const WorstElement& diff, std::string_view where) {
  Verdict v = Verdict::Fail(
      fmt::format("document {} of row {}: {}[h={}, d={}] of {} changed to {:.9g} (was {:.9g}) when the other "
                  "documents of its row (keys, values, upstream gradient) changed{}",
                  span.doc, span.b, diff.tensor, diff.h, diff.j, where, diff.got, diff.want, BeyondOrder(diff)),
      diff, diff.error);
  v.At("other documents changed (backward)", Role::kLeak);
  v.expected_visibility = s.visible;
  return v;
}

}  // namespace

Verdict check_backward_packed_isolation(Adapter& adapter, const Case& c, const Options& options) {
  LawRun law(check_backward_packed_isolation, adapter);
  if (!law.Supports(c)) return law.stop();
  law.Use(reference::MakeScenario(c));
  const Scenario& s = law.scenario();
  const std::vector<DocumentSpan> spans = PackedDocuments(s);
  if (spans.empty()) return Verdict::Skip("no row packs two or more non-empty documents");
  if (!law.Start()) return law.stop();
  const AdapterRun& base = law.base();
  const TensorD& dout = law.upstream();
  Oracle oracle(s, options, dout);
  const int first_query_slot = s.tk - s.tq;

  // (1) each document alone. Dynamic NTK derives its frequencies from the longest
  // sequence of the call: a document alone legitimately sees others; only (2) applies.
  const bool length_dependent = c.encoding.kind == EncodingKind::kRope &&
                                c.encoding.rope.scaling == RopeScaling::kDynamicNtk;
  Verdict closest = Verdict::Pass();
  for (const DocumentSpan& span : spans) {
    if (length_dependent) break;
    const int query_count = span.first_slot + span.length - std::max(span.first_slot, first_query_slot);
    if (query_count <= 0) continue;  // none of its tokens is a query
    Case alone = c;
    alone.rows = {RowSpec{0, 0, {span.length}, c.rows[span.b].prefix_len, c.rows[span.b].position_offset}};
    alone.query_len = query_count;
    alone.decode_chunks.clear();
    Scenario t = reference::MakeScenario(alone);
    for (int slot = 0; slot < span.length; ++slot) CopyToken(s, span.b, span.first_slot + slot, t, 0, slot);
    const int first_query = span.first_slot + span.length - query_count - first_query_slot;  // its first row i
    TensorD alone_dout(1, c.q_heads, query_count, c.value_dim);
    for (int q = 0; q < query_count; ++q)
      for (int h = 0; h < c.q_heads; ++h)
        for (int d = 0; d < c.value_dim; ++d) alone_dout.at(0, h, q, d) = dout.at(span.b, h, first_query + q, d);
    const std::optional<AdapterRun> run =
        law.BackwardRelaid(t, alone_dout, fmt::format(" (document {} of row {} alone)", span.doc, span.b));
    if (!run) return law.stop();
    // The packed gradients with the document's rows and key slots taken from the call alone.
    AdapterRun got = base;
    std::vector<uint8_t> rows(static_cast<size_t>(s.batch) * s.tq, 0), slots(static_cast<size_t>(s.batch) * s.tk, 0);
    const std::vector<uint8_t> real = RealNonEmptyRows(s);
    for (int q = 0; q < query_count; ++q) {
      const int i = first_query + q;
      rows[RowIndex(s, span.b, i)] = real[RowIndex(s, span.b, i)];
      for (int h = 0; h < c.q_heads; ++h)
        for (int d = 0; d < c.head_dim; ++d) got.dq.at(span.b, h, i, d) = run->dq.at(0, h, q, d);
    }
    for (int slot = 0; slot < span.length; ++slot) {
      const int j = span.first_slot + slot;
      slots[static_cast<size_t>(span.b) * s.tk + j] = 1;
      for (int kv = 0; kv < c.kv_heads; ++kv) {
        for (int d = 0; d < c.head_dim; ++d) got.dk.at(span.b, kv, j, d) = run->dk.at(0, kv, slot, d);
        for (int d = 0; d < c.value_dim; ++d) got.dv.at(span.b, kv, j, d) = run->dv.at(0, kv, slot, d);
      }
    }
    const std::string what = fmt::format("document {} of row {} alone vs packed", span.doc, span.b);
    for (const char* name : {"dq", "dk", "dv"}) {
      if (std::optional<Verdict> beyond = BeyondRange(oracle, name, what)) return *beyond;
      Verdict v = oracle.CheckSelf(got.tensor(name), base.tensor(name), name == std::string_view("dq") ? rows : slots,
                                   fmt::format("{} ({})", what, name), name);
      if (v.passed()) {
        KeepCloser(closest, std::move(v));
        continue;
      }
      if (v.failed()) {
        v.At(fmt::format("document alone vs packed ({})", name), Role::kNumeric);
        v.expected_visibility = s.visible;
      }
      return v;
    }
  }

  // (2) every other document of the row changed: keys and values moved, upstream negated and shifted
  const double magnitude = PerturbationMagnitude(s, law.convention());
  // the document's rows and key slots sum the same terms in both runs (nothing of another
  // document is visible to them): by value, or within a run-dependent order's rounding
  const SummationOrder order(adapter.capabilities(), s, dout);
  for (const DocumentSpan& span : spans) {
    Scenario perturbed = s;
    TensorD other_dout = dout;
    const RowSpec& row = c.rows[span.b];
    for (int j = row.left_pad; j < row.left_pad + row.real_tokens(); ++j) {
      if (j >= span.first_slot && j < span.first_slot + span.length) continue;
      for (int h = 0; h < s.k.shape[1]; ++h) {
        for (int d = 0; d < s.k.shape[3]; ++d)
          perturbed.k.at(span.b, h, j, d) = reference::RoundTo(c.dtype, s.k.at(span.b, h, j, d) + magnitude);
        for (int d = 0; d < s.v.shape[3]; ++d)
          perturbed.v.at(span.b, h, j, d) = reference::RoundTo(c.dtype, s.v.at(span.b, h, j, d) - magnitude);
      }
      const int i = j - first_query_slot;
      if (i < 0 || s.empty_row[RowIndex(s, span.b, i)]) continue;
      for (int h = 0; h < c.q_heads; ++h)
        for (int d = 0; d < c.value_dim; ++d)
          other_dout.at(span.b, h, i, d) = reference::RoundTo(c.dtype, 0.5 - 2.0 * dout.at(span.b, h, i, d));
    }
    const std::optional<AdapterRun> run = law.BackwardPerturbed(perturbed, other_dout, " (other documents changed)");
    if (!run) return law.stop();
    for (int j = span.first_slot; j < span.first_slot + span.length; ++j) {
      if (const std::optional<WorstElement> diff = KeyGradientValueDifference(*run, base, span.b, j, order))
        return Crossed(s, span, *diff, fmt::format("its key slot {}", j));
      const int i = j - first_query_slot;
      if (i < 0 || s.empty_row[RowIndex(s, span.b, i)]) continue;
      if (const std::optional<WorstElement> diff = DqValueDifference(run->dq, base.dq, span.b, i, order))
        return Crossed(s, span, *diff, fmt::format("its query i={}", i));
    }
  }
  return closest;
}

}  // namespace attncheck
