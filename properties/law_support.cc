#include "properties/law_support.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fmt/format.h>
#include <functional>
#include <limits>
#include <stdexcept>

#include "cases/accuracy.h"
#include "properties/row_error.h"
#include "reference/attention.h"
#include "reference/declared_attention.h"
#include "reference/mask.h"
#include "reference/positional.h"
#include "reference/xpos.h"

namespace attncheck {

namespace {

// `preferred` when `why_not` has no reason against it, else the first of the
// adapter's accepted conventions without one; nullopt with the first reason met
// among the accepted ones (in their order) in *why. Each is judged once.
std::optional<MaskConvention> FirstExpressing(
    const Adapter& adapter, MaskConvention preferred, std::string* why,
    const std::function<std::optional<std::string>(MaskConvention)>& why_not) {
  const std::optional<std::string> preferred_reason = why_not(preferred);
  if (!preferred_reason) return preferred;
  std::string first_reason;
  for (MaskConvention m : adapter.capabilities().masks) {
    const std::optional<std::string> reason = m == preferred ? preferred_reason : why_not(m);
    if (!reason) return m;
    if (first_reason.empty()) first_reason = *reason;
  }
  if (why) *why = first_reason.empty() ? "no accepted mask convention can express this case" : first_reason;
  return std::nullopt;
}

}  // namespace

std::optional<MaskConvention> ChooseConvention(const Adapter& adapter, const reference::Scenario& s,
                                               std::string* why) {
  return FirstExpressing(adapter, s.c.mask, why, [&](MaskConvention m) { return WhyUnsupported(adapter, s, m); });
}

std::optional<MaskConvention> ChooseBackwardConvention(const Adapter& adapter, const reference::Scenario& s,
                                                       std::string* why) {
  return FirstExpressing(adapter, s.c.mask, why, [&](MaskConvention m) { return WhyBackwardUnsupported(adapter, s, m); });
}

Case WithEmptyRows(const Case& c) {
  Case with_empty = c;
  const int leading = c.query_len - c.key_len();  // > 0: leading queries, rows that already see no key
  if (leading <= 0 &&
      std::none_of(c.rows.begin(), c.rows.end(), [](const RowSpec& row) { return row.left_pad > 0; })) {
    with_empty.rows[0].left_pad += 1;  // right pads keep the other rows aligned
    for (size_t r = 1; r < with_empty.rows.size(); ++r) with_empty.rows[r].right_pad += 1;
    with_empty.query_len = with_empty.key_len();
    with_empty.decode_chunks.clear();
  }
  if (leading > 0) {
    with_empty.rows.push_back(RowSpec{0, with_empty.key_len(), {0}, 0, leading});
  } else {
    with_empty.rows.push_back(RowSpec{with_empty.key_len(), 0, {0}, 0, 0});
  }
  return with_empty;
}

namespace {

// WithEmptyRows with the pad query after the real ones: one right pad more in every row.
// (With leading queries, Tq > Tk, WithEmptyRows adds no pad query.)
Case WithTrailingEmptyRows(const Case& c) {
  if (c.query_len > c.key_len()) return WithEmptyRows(c);
  Case with_empty = c;
  for (RowSpec& row : with_empty.rows) row.right_pad += 1;
  with_empty.query_len = with_empty.key_len();
  with_empty.decode_chunks.clear();
  with_empty.rows.push_back(RowSpec{0, with_empty.key_len(), {0}, 0, 0});
  return with_empty;
}

// The case with leading queries (Tq > Tk): one before every row's first key (its left
// pad moved to the right, its positions starting at 1 or later: reference/scenario.cc),
// and one more row whose only document is empty, so its leading queries see no key
// under every visibility.
Case WithLeadingEmptyRows(const Case& c) {
  Case with_empty = c;
  if (c.query_len <= c.key_len()) {
    for (RowSpec& row : with_empty.rows) {
      row.right_pad += row.left_pad;
      row.left_pad = 0;
      row.position_offset = std::max(row.position_offset, 1);
    }
    with_empty.query_len = with_empty.key_len() + 1;
    with_empty.decode_chunks.clear();
  }
  const int leading = with_empty.query_len - with_empty.key_len();
  with_empty.rows.push_back(RowSpec{0, with_empty.key_len(), {0}, 0, leading});
  return with_empty;
}

// Whether the adapter's kernel produces some row of s that sees no key under convention
// m: a varlen descriptor hands over only the sequences' queries, pad queries none.
bool ProducesEmptyRow(const Adapter& adapter, MaskConvention m, const reference::Scenario& s) {
  const bool varlen = m == MaskConvention::kDescriptor && adapter.capabilities().descriptor_forms.varlen;
  for (size_t r = 0; r < s.empty_row.size(); ++r)
    if (s.empty_row[r] && (!varlen || s.query_valid[r])) return true;
  return false;
}

}  // namespace

Case EmptyRowsCaseFor(const Adapter& adapter, const Case& c, bool backward) {
  Case first = WithEmptyRows(c);
  std::vector<Case> candidates;
  candidates.push_back(WithTrailingEmptyRows(c));
  if (adapter.capabilities().queries_beyond_keys) candidates.push_back(WithLeadingEmptyRows(c));
  const auto fits = [&](const Case& candidate) {
    std::optional<reference::Scenario> s;
    try {
      s = reference::MakeLayout(candidate);
    } catch (const std::invalid_argument&) {
      return false;  // a construction this case's shape does not allow
    }
    const std::optional<MaskConvention> m =
        backward ? ChooseBackwardConvention(adapter, *s, nullptr) : ChooseConvention(adapter, *s, nullptr);
    return m && ProducesEmptyRow(adapter, *m, *s);
  };
  if (fits(first)) return first;
  for (Case& candidate : candidates)
    if (!WhyUnsupported(adapter, candidate) && fits(candidate)) return std::move(candidate);
  // A case drawn in one of several declared layouts: the constructions in the kernel's
  // first layout too (varlen produces an empty row where a padded layout cannot).
  if (c.layout != DescriptorLayout::kAuto) {
    first.layout = DescriptorLayout::kAuto;
    if (!WhyUnsupported(adapter, first) && fits(first)) return first;
    for (Case candidate : candidates) {
      candidate.layout = DescriptorLayout::kAuto;
      if (!WhyUnsupported(adapter, candidate) && fits(candidate)) return candidate;
    }
  }
  // None fits: the last, whose skip names what even it cannot get past (a backward call
  // without varlen, say, rather than the left pad the first needs).
  return candidates.back();
}

std::vector<int> DistinctVisibleRows(const reference::Scenario& s, int b) {
  std::vector<int> rows;
  const auto visible_set = [&](int i) { return s.visible.data() + RowIndex(s, b, i) * s.tk; };
  for (int i = 0; i < s.tq; ++i) {
    if (!s.query_valid[RowIndex(s, b, i)] || s.empty_row[RowIndex(s, b, i)]) continue;
    const bool seen = std::any_of(rows.begin(), rows.end(), [&](int row) {
      return std::memcmp(visible_set(row), visible_set(i), static_cast<size_t>(s.tk)) == 0;
    });
    if (!seen) rows.push_back(i);
  }
  return rows;
}

int AnchorFor(const std::vector<int>& anchors, int round, uint64_t seed) {
  if (anchors.empty()) return -1;
  if (round == 0) return anchors.front();
  if (round == 1) return anchors[anchors.size() / 2];
  return anchors[(seed + 7919u * round) % anchors.size()];
}

std::vector<DocumentSpan> PackedDocuments(const reference::Scenario& s) {
  std::vector<DocumentSpan> spans;
  for (int b = 0; b < s.batch; ++b) {
    const RowSpec& row = s.c.rows[b];
    int non_empty = 0;
    for (int len : row.documents) non_empty += len > 0;
    if (non_empty < 2) continue;
    int slot = row.left_pad;
    for (int d = 0; d < static_cast<int>(row.documents.size()); ++d) {
      if (row.documents[d] > 0) spans.push_back({b, d, slot, row.documents[d]});
      slot += row.documents[d];
    }
  }
  return spans;
}

// Keys of row b that no query of the row may read.
std::vector<int> UnreadKeys(const reference::Scenario& s, int b) {
  std::vector<int> keys;
  for (int j = 0; j < s.tk; ++j) {
    bool read = false;
    for (int i = 0; i < s.tq && !read; ++i) read = s.is_visible(b, i, j);
    if (!read) keys.push_back(j);
  }
  return keys;
}

Case GroupedCase(const Case& c) {
  Case grouped = c;
  if (grouped.kv_heads == grouped.q_heads) {
    grouped.kv_heads = 1;
    for (int d = c.q_heads / 2; d >= 2; --d)
      if (c.q_heads % d == 0) {
        grouped.kv_heads = d;
        break;
      }
  }
  return grouped;
}

reference::Scenario RepeatedKvHeads(const reference::Scenario& s) {
  Case expanded_case = s.c;
  expanded_case.kv_heads = s.c.q_heads;
  reference::Scenario expanded = reference::MakeScenario(expanded_case);
  const int group = s.c.q_heads / s.c.kv_heads;
  for (int b = 0; b < s.batch; ++b)
    for (int h = 0; h < s.c.q_heads; ++h)
      for (int j = 0; j < s.tk; ++j) {
        for (int d = 0; d < s.c.head_dim; ++d) expanded.k.at(b, h, j, d) = s.k.at(b, h / group, j, d);
        for (int d = 0; d < s.c.value_dim; ++d) expanded.v.at(b, h, j, d) = s.v.at(b, h / group, j, d);
      }
  expanded.q = s.q;
  return expanded;
}

void ZeroRows(TensorD& t, const std::vector<uint8_t>& rows) {
  const int batch = t.shape[0], heads = t.shape[1], tokens = t.shape[2], width = t.shape[3];
  for (int b = 0; b < batch; ++b)
    for (int i = 0; i < tokens; ++i) {
      if (!rows[static_cast<size_t>(b) * tokens + i]) continue;
      for (int h = 0; h < heads; ++h)
        for (int d = 0; d < width; ++d) t.at(b, h, i, d) = 0.0;
    }
}

std::optional<MaskConvention> ChooseSessionConvention(const Adapter& adapter, const reference::Scenario& s,
                                                      std::span<const int> steps, MaskConvention preferred,
                                                      std::string* why) {
  return FirstExpressing(adapter, preferred, why, [&](MaskConvention m) {
    std::optional<std::string> reason = WhyUnsupported(adapter, s, m);
    return reason ? reason : WhySessionCannotExpress(s, steps, m);
  });
}

Verdict FaultVerdict(const AdapterRun& run, std::string_view what) {
  if (run.kind == AdapterFault::kRefused) return Verdict::Skip(run.fault);  // "refused: <reason>"
  Fault fault = Fault::kNone;
  if (FaultOf(run.kind, &fault)) return Verdict::Error(fmt::format("{}: {}", what, run.fault), fault);
  return Verdict::Fail(fmt::format("{}: buffer contract broken: {}", what, run.fault)).At("buffer contract", Role::kFault);
}

void CopyToken(const reference::Scenario& from, int from_b, int from_slot, reference::Scenario& to, int to_b,
               int to_slot) {
  for (int h = 0; h < from.k.shape[1]; ++h) {
    for (int d = 0; d < from.k.shape[3]; ++d) to.k.at(to_b, h, to_slot, d) = from.k.at(from_b, h, from_slot, d);
    for (int d = 0; d < from.v.shape[3]; ++d) to.v.at(to_b, h, to_slot, d) = from.v.at(from_b, h, from_slot, d);
  }
  const int from_i = from_slot - (from.tk - from.tq), to_i = to_slot - (to.tk - to.tq);
  if (from_i < 0 || to_i < 0) return;
  for (int h = 0; h < from.q.shape[1]; ++h) {
    for (int d = 0; d < from.q.shape[3]; ++d) to.q.at(to_b, h, to_i, d) = from.q.at(from_b, h, from_i, d);
  }
}

bool FillEmptiesRows(MaskConvention m, Dtype dtype, Blocking blocking) {
  if (!IsAdditive(m)) return true;
  return std::isinf(reference::AdditiveFill(m, dtype)) || blocking != Blocking::kNegInfOnly;
}

bool FillBlocksEveryKey(MaskConvention m, Dtype dtype, Blocking blocking) {
  if (!IsAdditive(m)) return true;
  return std::isinf(reference::AdditiveFill(m, dtype)) || blocking == Blocking::kFill;
}

bool EmptyRowsMayRead(const Capabilities& caps, MaskConvention m, Dtype dtype) {
  return !FillEmptiesRows(m, dtype, caps.blocking) || caps.masked_rows == MaskedRowPolicy::kMeanV;
}

namespace {

// The largest factor by which encoding key slot j at its position stretches a
// vector: 1 for a rotation (RoPE) or no encoding; xPos scales pair p of a key by
// ζ_p^(−position/scale_base) (reference/xpos.h), largest at the first or last pair.
double LargestKeyStretch(const reference::Scenario& s) {
  if (s.c.encoding.kind != EncodingKind::kXpos) return 1.0;
  const int pairs = s.c.rotary_dim() / 2;
  if (pairs == 0) return 1.0;
  double stretch = 1.0;
  for (int position : s.key_positions) {
    for (int pair : {0, pairs - 1}) {
      const double zeta = reference::XposZeta(pair, s.c.rotary_dim());
      stretch = std::max(stretch, std::pow(zeta, -position / s.c.encoding.xpos_scale_base));
    }
  }
  return stretch;
}

// The largest change of score (i, ·) per unit of max|u_d| when a key moves by u
// (PerturbationMagnitude), from q_i as encoded [d]: stretch·√D·‖q_i‖ where the
// key is rotated, Σ_d |q_id| where nothing rotates; before the scale.
double ScoreChangePerUnit(const double* q_row, int d, bool rotates, double stretch) {
  double l1 = 0.0, l2 = 0.0;
  for (int e = 0; e < d; ++e) {
    l1 += std::abs(q_row[e]);
    l2 += q_row[e] * q_row[e];
  }
  return rotates ? std::sqrt(l2 * d) * stretch : l1;
}

// The largest |k_d| of the scenario.
double LargestKeyElement(const reference::Scenario& s) {
  double max_k = 0.0;
  for (double x : s.k.data) max_k = std::max(max_k, std::abs(x));
  return max_k;
}

// The largest Δ under which a score that moves by per_unit per unit of max|u_d| stays
// within `room` (< 0 when none does): a key moved by u has |u_d| ≤ Δ·(1 + ε) + ε·|k_d|
// after rounding to the dtype, and a tenth of the room is left to that allowance, which
// grows with the scores (4 unit roundoffs of each change: at most 3 % of it, in bf16).
double MagnitudeWithin(double room, double per_unit, double max_k, double eps) {
  return (0.9 * std::max(room, 0.0) / per_unit - eps * max_k) / (1.0 + eps);
}

}  // namespace

double PerturbationMagnitude(const reference::Scenario& s, MaskConvention convention) {
  const double limit = s.c.dtype == Dtype::kF16 ? 256.0 : 1000.0;
  const double headroom = FillHeadroom(s, convention);
  if (!std::isfinite(headroom)) return limit;
  // A key moved by u (|u_d| ≤ Δ·(1 + ε) + ε·|k_d| after rounding to the dtype, ε its
  // unit roundoff) moves score (i, j) by scale·q_i·E_j(u) ≤ scale·‖q_i‖·‖E_j(u)‖ with
  // q_i as encoded and ‖E_j(u)‖ ≤ stretch·√D·max|u_d| (a rotation keeps the norm); where
  // nothing rotates (an added position vector passes u through), by scale·Σ_d |q_id|·max|u_d|.
  TensorD q, k;
  reference::EncodeQk(s, q, k);
  const bool rotates = s.c.encoding.kind == EncodingKind::kRope || s.c.encoding.kind == EncodingKind::kXpos;
  const double stretch = LargestKeyStretch(s);
  const int d = q.shape[3];
  double per_unit = 0.0;  // the largest score change per unit of max|u_d|
  for (size_t row = 0; row * d < q.data.size(); ++row)
    per_unit = std::max(per_unit, ScoreChangePerUnit(q.data.data() + row * d, d, rotates, stretch));
  per_unit *= s.c.effective_scale();
  if (per_unit <= 0.0) return limit;
  const double allowed = MagnitudeWithin(headroom, per_unit, LargestKeyElement(s), UnitRoundoff(s.c.dtype));
  return std::clamp(allowed, 0.0, limit);
}

std::vector<double> ScoreSafeLimits(const reference::Scenario& s, const Accuracy& accuracy) {
  if (!reference::ScoresMayOverflow(accuracy, s.c.dtype)) return {};
  // a softcap keeps a stored score small, unless the dot before it accumulates in f16
  if (s.c.softcap > 0.0 && accuracy.score_accum != Dtype::kF16) return {};
  TensorD q, k;
  reference::EncodeQk(s, q, k);
  const std::shared_ptr<const TensorD> bias = reference::HasScoreBias(s.c) ? reference::SharedBiasTensor(s) : nullptr;
  const bool rotates = s.c.encoding.kind == EncodingKind::kRope || s.c.encoding.kind == EncodingKind::kXpos;
  const double stretch = LargestKeyStretch(s), scale = s.c.effective_scale();
  // the score stored in f16; where the dot accumulates in f16, the dot before the scale too
  const double room = 65504.0 * (accuracy.score_accum == Dtype::kF16 ? std::min(1.0, scale) : 1.0);
  const double max_k = LargestKeyElement(s), eps = UnitRoundoff(s.c.dtype);
  const int hq = q.shape[1], group = hq / k.shape[1], d = q.shape[3];
  std::vector<double> limits(static_cast<size_t>(s.batch) * s.tk, std::numeric_limits<double>::infinity());
  for (int b = 0; b < s.batch; ++b)
    for (int h = 0; h < hq; ++h)
      for (int i = 0; i < s.tq; ++i) {
        const double* q_row = &q.at(b, h, i, 0);
        const double per_unit = ScoreChangePerUnit(q_row, d, rotates, stretch) * scale;
        if (per_unit <= 0.0) continue;
        for (int j = 0; j < s.tk; ++j) {
          if (!s.is_visible(b, i, j)) continue;
          const double* k_row = &k.at(b, h / group, j, 0);
          double dot = 0.0;
          for (int e = 0; e < d; ++e) dot += q_row[e] * k_row[e];
          const double score = std::abs(scale * dot + (bias ? bias->at(b, h, i, j) : 0.0));
          double& limit = limits[static_cast<size_t>(b) * s.tk + j];
          limit = std::min(limit, MagnitudeWithin(room - score, per_unit, max_k, eps));
        }
      }
  return limits;
}

double ScoreSafeMagnitude(const std::vector<double>& limits, const std::vector<uint8_t>& perturbed_keys,
                          double magnitude) {
  double allowed = magnitude;
  for (size_t key = 0; key < limits.size(); ++key)
    if (perturbed_keys[key]) allowed = std::min(allowed, limits[key]);
  return std::clamp(allowed, 0.0, magnitude);
}

std::optional<std::string> WhyPerturbedFillCannotBlock(const Adapter& adapter, const reference::Scenario& t,
                                                       MaskConvention convention) {
  const Blocking blocking = adapter.capabilities().blocking;
  if (FillBlocksEveryKey(convention, t.c.dtype, blocking)) return std::nullopt;
  if (FillHeadroom(t, convention) > 0.0) return std::nullopt;
  return fmt::format("the perturbed keys would outgrow the {} fill {:g}, which the kernel adds to the score "
                     "(blocking '{}')",
                     Name(convention), reference::AdditiveFill(convention, t.c.dtype), Name(blocking));
}

std::optional<WorstElement> FirstBitwiseDifference(const TensorD& a, const TensorD& b, int batch_row, int query,
                                                  std::string_view tensor) {
  for (int h = 0; h < a.shape[1]; ++h) {
    const size_t row = ((static_cast<size_t>(batch_row) * a.shape[1] + h) * a.shape[2] + query) * a.shape[3];
    if (std::memcmp(a.data.data() + row, b.data.data() + row, a.shape[3] * sizeof(double)) == 0) continue;  // the row bitwise equal
    for (int d = 0; d < a.shape[3]; ++d) {
      const double x = a.at(batch_row, h, query, d), y = b.at(batch_row, h, query, d);
      if (std::memcmp(&x, &y, sizeof x) != 0 && !(std::isnan(x) && std::isnan(y))) {
        WorstElement diff = WorstElement::Compared(tensor, batch_row, h, query, d, x, y, 0.0);
        KeepRow(diff, a, b);
        return diff;
      }
    }
  }
  return std::nullopt;
}

}  // namespace attncheck
