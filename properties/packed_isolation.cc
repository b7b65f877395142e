// Law 3, packed-document isolation (DESIGN §6): a document packed with others
// gives the same output as the document alone in its own row (positions reset per
// document, so the alone row uses the same logical positions), and changing the
// other documents of its row changes nothing in it (bitwise).
#include <fmt/format.h>

#include "properties/law_run.h"
#include "properties/law_support.h"
#include "properties/tolerance.h"
#include "reference/data.h"

namespace attncheck {

using reference::Scenario;

Verdict check_packed_isolation(Adapter& adapter, const Case& c, const Options& options) {
  LawRun law(check_packed_isolation, adapter);
  if (!law.Supports(c)) return law.stop();
  law.Use(reference::MakeScenario(c));
  const Scenario& s = law.scenario();
  const std::vector<DocumentSpan> spans = PackedDocuments(s);
  if (spans.empty()) return Verdict::Skip("no row packs two or more non-empty documents");
  if (!law.Start()) return law.stop();
  const AdapterRun& base = law.base();
  Oracle oracle(s, SharedAngles(options));
  const int first_query_slot = s.tk - s.tq;

  // (1) each document alone, in a row of its own, at the same logical positions.
  // Dynamic NTK derives its frequencies from the longest sequence of the call, so
  // a document alone legitimately sees other frequencies: only (2) applies there.
  const bool length_dependent = c.encoding.kind == EncodingKind::kRope &&
                                c.encoding.rope.scaling == RopeScaling::kDynamicNtk;
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
    const std::optional<AdapterRun> run = law.AttendRelaid(t);
    if (!run) return law.stop();
    TensorD got = base.out;
    std::vector<uint8_t> rows(static_cast<size_t>(s.batch) * s.tq, 0);
    const std::vector<uint8_t> real = RealNonEmptyRows(s);
    for (int q = 0; q < query_count; ++q) {
      const int i = span.first_slot + span.length - query_count + q - first_query_slot;
      rows[RowIndex(s, span.b, i)] = real[RowIndex(s, span.b, i)];
      for (int h = 0; h < c.q_heads; ++h)
        for (int d = 0; d < c.value_dim; ++d) got.at(span.b, h, i, d) = run->out.at(0, h, q, d);
    }
    Verdict v = oracle.CheckSelf(got, base.out, rows,
                                 fmt::format("document {} of row {} alone vs packed", span.doc, span.b));
    if (!v.passed()) {
      v.At("document alone vs packed", Role::kNumeric);
      v.expected_visibility = s.visible;
      return v;
    }
  }

  // (2) perturb every other document of the row: the document's rows stay bitwise equal
  const double magnitude = PerturbationMagnitude(s, law.convention());
  const std::vector<double> limits = ScoreSafeLimits(s, adapter.capabilities().accuracy);
  std::vector<uint8_t> others;  // [B·Tk]: the other documents' keys of the span's row
  for (const DocumentSpan& span : spans) {
    Scenario perturbed = s;
    const RowSpec& row = c.rows[span.b];
    others.assign(static_cast<size_t>(s.batch) * s.tk, 0);
    for (int j = row.left_pad; j < row.left_pad + row.real_tokens(); ++j)
      others[static_cast<size_t>(span.b) * s.tk + j] = j < span.first_slot || j >= span.first_slot + span.length;
    const double moved = ScoreSafeMagnitude(limits, others, magnitude);
    for (int j = 0; j < s.tk; ++j) {
      if (!others[static_cast<size_t>(span.b) * s.tk + j]) continue;
      for (int h = 0; h < s.k.shape[1]; ++h) {
        for (int d = 0; d < s.k.shape[3]; ++d)
          perturbed.k.at(span.b, h, j, d) = reference::RoundTo(c.dtype, s.k.at(span.b, h, j, d) + moved);
        for (int d = 0; d < s.v.shape[3]; ++d)
          perturbed.v.at(span.b, h, j, d) = reference::RoundTo(c.dtype, s.v.at(span.b, h, j, d) - moved);
      }
    }
    const std::optional<AdapterRun> run = law.AttendPerturbed(perturbed);
    if (!run) return law.stop();
    for (int slot = std::max(span.first_slot, first_query_slot); slot < span.first_slot + span.length; ++slot) {
      const int i = slot - first_query_slot;
      if (s.empty_row[RowIndex(s, span.b, i)]) continue;
      if (const std::optional<WorstElement> diff = FirstBitwiseDifference(run->out, base.out, span.b, i)) {
        Verdict v = Verdict::Fail(
            fmt::format("document {} of row {}: query i={} changed when the other documents of its row were "
                        "perturbed by ±{:g}: out[h={}, d={}] = {:.9g}, was {:.9g}",
                        span.doc, span.b, i, moved, diff->h, diff->j, diff->got, diff->want),
            *diff, diff->error);
        v.At("other documents perturbed", Role::kLeak);
        v.expected_visibility = s.visible;
        return v;
      }
    }
  }
  return Verdict::Pass();
}

}  // namespace attncheck
