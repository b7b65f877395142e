#include "properties/tolerance.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <stdexcept>

#include <Eigen/Core>

#include "properties/row_error.h"
#include "reference/attention.h"
#include "reference/backward.h"
#include "reference/declared_attention.h"
#include "reference/positional.h"

namespace attncheck {

Options DeclaredOptions(const Capabilities& caps, Options options) {
  options.accuracy = caps.accuracy;
  options.owns_encoding = caps.owns_rope;
  return options;
}

Options SharedAngles(Options options) {
  options.shared_angles = true;
  return options;
}

namespace {

double Norm(const TensorD& t, int b, int h, int i) {
  double sum = 0.0;
  const double* x = t.data.data() + ((static_cast<size_t>(b) * t.shape[1] + h) * t.shape[2] + i) * t.shape[3];
  for (int d = 0; d < t.shape[3]; ++d) sum += x[d] * x[d];
  return std::sqrt(sum);
}

bool HasRotation(const Case& c) {
  return c.encoding.kind == EncodingKind::kRope || c.encoding.kind == EncodingKind::kXpos;
}

}  // namespace

// The floor, the oracle and the bound of every output element, each computed on
// first use (the floor first: CheckSelf may need the oracle on a few rows only).
struct Oracle::Model {
  TensorD encoded_q, encoded_k;  // q and k encoded once for the oracle, the floor and the naive model
  std::shared_ptr<const TensorD> bias;
  TensorD want, floor, bound;  // [B, Hq, Tq, Dv]; want, bound empty until computed
  std::vector<double> magnitude;  // [B, Hq, Tq] max |v| over the row's visible values
  bool has_floor = false, has_want = false, has_bound = false;
  // The share of compared rows whose bound may be uninformative and be left out of a
  // pass: 0 for "out" (any such row makes the comparison a skip); a quarter for the
  // gradients, whose rows often cancel (Σ_j dS_ij = 0 exactly, dK sums dS over rows).
  double uninformative_share = 0.0;
  // A row whose right values all lie below this is informative whatever its bound: the
  // dtype's smallest normal for the gradients, under which a CPU that flushes subnormals
  // (the floor allows it) returns 0, so 0 is a right answer there; 0 for "out".
  double flushed = 0.0;
};

namespace {

// A row whose allowed error is a sizeable part of its values' magnitude cannot
// tell a right output from a zeroed, constant or stale one (tolerance.h). A row
// whose visible values are all 0 has exactly one right output: informative.
bool Informative(double allowed, double magnitude) {
  return allowed < kUninformative * magnitude || magnitude == 0.0;
}

// floor_out = the floor of DESIGN §6 (see tolerance.h) per element, magnitude =
// max |v| per row.
void ComputeFloor(const reference::Scenario& s, const TensorD& encoded_q, const TensorD& encoded_k,
                  const TensorD* bias_ptr, const Options& options, TensorD& floor_out, std::vector<double>& magnitude) {
  const Case& c = s.c;
  const int hq = c.q_heads, group = c.q_heads / c.kv_heads, dv = c.value_dim;
  const double u = UnitRoundoff(c.dtype);
  const double scale = c.effective_scale();
  // The adapter's own encoding rounds q, k (and RoPE angles) its own way; q, k the
  // harness encoded are the oracle's own.
  const bool rotation = options.owns_encoding && HasRotation(c) && !options.shared_angles;
  const bool qk_encoding = options.owns_encoding && reference::HasQkEncoding(c);
  const double u_score = UnitRoundoff(options.accuracy.score_accum), u_pv = UnitRoundoff(options.accuracy.pv_accum);
  // Per key (b, kv head, slot): |k_j| after encoding and max_d |v_jd|.
  const int hkv = c.kv_heads;
  std::vector<double> key_norm(static_cast<size_t>(s.batch) * hkv * s.tk), key_max_v(key_norm.size());
  for (int b = 0; b < s.batch; ++b)
    for (int kv = 0; kv < hkv; ++kv)
      for (int j = 0; j < s.tk; ++j) {
        const size_t key = (static_cast<size_t>(b) * hkv + kv) * s.tk + j;
        double max_v = 0.0;
        const double* value = s.v.data.data() + key * dv;  // v[b, kv, j, ·]
        for (int d = 0; d < dv; ++d) max_v = std::max(max_v, std::abs(value[d]));
        key_max_v[key] = max_v;
        key_norm[key] = Norm(encoded_k, b, kv, j);
      }
  floor_out = TensorD(s.batch, hq, s.tq, dv);
  magnitude.assign(static_cast<size_t>(s.batch) * hq * s.tq, 0.0);
  for (int b = 0; b < s.batch; ++b) {
    for (int h = 0; h < hq; ++h) {
      const int kv = h / group;
      for (int i = 0; i < s.tq; ++i) {
        double max_v = 0.0, max_k = 0.0, max_bias = 0.0;
        int visible = 0;
        int max_pos = s.query_positions[static_cast<size_t>(b) * s.tq + i];
        const uint8_t* visible_row = s.visible.data() + (static_cast<size_t>(b) * s.tq + i) * s.tk;
        const size_t keys = (static_cast<size_t>(b) * hkv + kv) * s.tk;  // key (b, kv, 0)
        const double* bias_row =
            bias_ptr != nullptr ? bias_ptr->data.data() + ((static_cast<size_t>(b) * hq + h) * s.tq + i) * s.tk : nullptr;
        for (int j = 0; j < s.tk; ++j) {
          if (!visible_row[j]) continue;
          ++visible;
          max_v = std::max(max_v, key_max_v[keys + j]);
          max_k = std::max(max_k, key_norm[keys + j]);
          max_pos = std::max(max_pos, s.key_positions[static_cast<size_t>(b) * s.tk + j]);
          if (bias_row != nullptr) max_bias = std::max(max_bias, std::abs(bias_row[j]));
        }
        const double u32 = std::ldexp(1.0, -24);
        double score_error_per_unit = (2.0 * std::sqrt(static_cast<double>(c.head_dim)) + 4.0) * u_score;
        // q, k rounded to the dtype after an encoding in float: each element off by a
        // relative u (+ the float's few u32), so |Δ(q·k)| ≤ (2u + 4u32)·|q|·|k|.
        if (qk_encoding) score_error_per_unit += 2.0 * u + 4.0 * u32;
        if (rotation) score_error_per_unit += 4.0 * u32 * (max_pos + 1.0);
        const double dot_bound = Norm(encoded_q, b, h, i) * max_k * scale;  // ≥ |scale · q·k|
        double score_error = score_error_per_unit * dot_bound;
        if (options.accuracy.scores_in_input_dtype) {
          // S stored in the input dtype (twice: the product, then the scaled score):
          // 2u·|S|, and |S| ≤ |q||k|·scale (≤ the softcap) + |bias|.
          const double score_bound = (c.softcap > 0.0 ? std::min(dot_bound, c.softcap) : dot_bound) + max_bias;
          score_error += 2.0 * u * score_bound;
        }
        double score_term = 2.0 * max_v * score_error;
        const double rounding = max_v * (4.0 * u + 2.0 * std::sqrt(static_cast<double>(visible)) * u_pv);
        if (!Informative(rounding + score_term, max_v) && std::isfinite(score_term)) {
          score_term = std::min(score_term, ScoreErrorEffect(s, encoded_q, encoded_k, bias_ptr, b, h, i, score_error));
        }
        double floor = rounding + score_term;
        // q, k that overflow the dtype (xPos in f16) make the floor inf · 0: no bound at all.
        floor = std::isnan(floor) ? std::numeric_limits<double>::infinity()
                                  : std::max(floor, std::numeric_limits<double>::min());
        magnitude[(static_cast<size_t>(b) * hq + h) * s.tq + i] = max_v;
        std::fill_n(floor_out.data.begin() + static_cast<std::ptrdiff_t>(((static_cast<size_t>(b) * hq + h) * s.tq + i) * dv),
                    dv, floor);
      }
    }
  }
}

// The scenario's visibility with every query row not marked in `rows` [B·Tq]
// emptied: the oracle and the naive model compute rows independently and skip a
// row with no visible key, so they then run on the marked rows only (0 elsewhere).
std::vector<uint8_t> VisibleOnRows(const reference::Scenario& s, const std::vector<uint8_t>& rows) {
  std::vector<uint8_t> visible = s.visible;
  for (size_t row = 0; row < rows.size(); ++row)
    if (!rows[row]) std::fill_n(visible.begin() + static_cast<std::ptrdiff_t>(row * s.tk), s.tk, 0);
  return visible;
}

// The oracle (reference/attention.h AttentionCore in double) on the rows marked in
// `rows`, or on every row when rows is null.
TensorD OracleOnRows(const reference::Scenario& s, const TensorD& encoded_q, const TensorD& encoded_k,
                     const TensorD* bias, const std::vector<uint8_t>* rows) {
  const std::vector<uint8_t> visible = rows != nullptr ? VisibleOnRows(s, *rows) : s.visible;
  return reference::AttentionCore<double>(encoded_q, encoded_k, s.v, visible, bias, s.c.effective_scale(), s.c.softcap)
      .out;
}

}  // namespace

// Every P'_j/P_j lies in [e^−2δ, e^2δ] and Σ_j (P'_j − P_j) = 0, so
//   |O'_d − O_d| = |Σ_j (P'_j − P_j)(v_jd − O_d)| ≤ (e^2δ − 1)·Σ_j P_j·|v_jd − O_d|.
double ScoreErrorEffect(const reference::Scenario& s, const TensorD& encoded_q, const TensorD& encoded_k,
                       const TensorD* bias, int b, int h, int i, double delta) {
  const std::vector<double> p = reference::ProbabilityRow(encoded_q, encoded_k, s.visible, bias,
                                                          s.c.effective_scale(), s.c.softcap, b, h, i);
  double mass = 0.0;
  for (const double x : p) mass += x;
  // no softmax to read (scores that overflow): no sharper bound than the first-order one
  if (!(std::abs(mass - 1.0) < 1e-9)) return std::numeric_limits<double>::infinity();
  const int kv = h / (s.c.q_heads / s.c.kv_heads), dv = s.c.value_dim;
  double spread = 0.0;
  for (int d = 0; d < dv; ++d) {
    double out = 0.0, sum = 0.0;
    for (int j = 0; j < s.tk; ++j)
      if (p[static_cast<size_t>(j)] > 0.0) out += p[static_cast<size_t>(j)] * s.v.at(b, kv, j, d);
    for (int j = 0; j < s.tk; ++j)
      if (p[static_cast<size_t>(j)] > 0.0) sum += p[static_cast<size_t>(j)] * std::abs(s.v.at(b, kv, j, d) - out);
    spread = std::max(spread, sum);
  }
  return std::expm1(2.0 * delta) * spread;
}

std::vector<uint8_t> RealNonEmptyRows(const reference::Scenario& s) {
  std::vector<uint8_t> rows(static_cast<size_t>(s.batch) * s.tq, 0);
  for (size_t r = 0; r < rows.size(); ++r) rows[r] = s.query_valid[r] && !s.empty_row[r];
  return rows;
}

bool BitwiseEqualRows(const TensorD& a, const TensorD& b, const std::vector<uint8_t>& row_mask) {
  const int tq = a.shape[2], heads = a.shape[1], dv = a.shape[3];
  for (int batch_row = 0; batch_row < a.shape[0]; ++batch_row)
    for (int i = 0; i < tq; ++i) {
      if (!row_mask.empty() && !row_mask[static_cast<size_t>(batch_row) * tq + i]) continue;
      for (int h = 0; h < heads; ++h)
        for (int d = 0; d < dv; ++d)
          if (!(a.at(batch_row, h, i, d) == b.at(batch_row, h, i, d))) return false;
    }
  return true;
}

namespace {

// The largest |a − b| over query row (b, h, i).
double RowError(const TensorD& a, const TensorD& b, int batch_row, int h, int i) {
  double error = 0.0;
  const size_t row = a.shape[3] > 0 ? a.index(batch_row, h, i, 0) : 0;
  for (int d = 0; d < a.shape[3]; ++d) error = std::max(error, std::abs(a.data[row + d] - b.data[row + d]));
  return error;
}

// Shared loop of every comparison: NaN / inf first, then error against bound (an
// error beyond even an uninformative bound fails); a skip when nothing failed but
// a row's bound is uninformative. A row
// within its floor, where the floor is informative, is settled whatever its full
// bound (so Check agrees with CheckOutcome's fast path), and so is a row whose values
// all lie below `flushed` (Model::flushed). magnitude [B, Hq, Tq] as Model::magnitude.
Verdict Compare(const TensorD& got, const TensorD& want, const TensorD& bound, const TensorD& floor,
                double bound_factor, const std::vector<double>& magnitude, const std::vector<uint8_t>& row_mask,
                std::string_view what, std::string_view tensor, double uninformative_share, double flushed) {
  Verdict verdict;
  double worst_ratio = -1.0;
  int uninformative = 0, compared = 0;
  WorstElement loosest;  // the uninformative row with the largest allowed error / magnitude
  double loosest_ratio = -1.0;
  const int batch = got.shape[0], heads = got.shape[1], tq = got.shape[2], dv = got.shape[3];
  for (int b = 0; b < batch; ++b) {
    for (int h = 0; h < heads; ++h) {
      for (int i = 0; i < tq; ++i) {
        if (!row_mask.empty() && !row_mask[static_cast<size_t>(b) * tq + i]) continue;
        if (dv == 0) continue;
        ++compared;
        const double row_magnitude = magnitude[(static_cast<size_t>(b) * heads + h) * tq + i];
        const double row_allowed = bound_factor * bound.at(b, h, i, 0);  // the same on every d of the row
        const double row_floor = bound_factor * floor.at(b, h, i, 0);
        const bool informative = Informative(row_allowed, row_magnitude) || row_magnitude < flushed ||
                                 (Informative(row_floor, row_magnitude) && RowError(got, want, b, h, i) <= row_floor);
        if (!informative) {
          ++uninformative;
          const double looseness = row_allowed / row_magnitude;
          if (!(looseness <= loosest_ratio)) {
            loosest_ratio = looseness;
            loosest = WorstElement::Row(tensor, b, h, i, row_allowed, row_magnitude);
          }
        }
        const size_t row = got.index(b, h, i, 0);  // the row's elements are contiguous
        // The bound is the same on every d of the row, so error / allowed rises with
        // the error: the row's worst element is the first whose ratio equals the
        // ratio of its largest error, looked for only when that beats the worst so
        // far (no division per element for it). The row's maxima are kept in locals.
        double row_error = -1.0, row_rel = 0.0;
        for (int d = 0; d < dv; ++d) {
          const double g = got.data[row + d], w = want.data[row + d];
          if (!std::isfinite(g) && std::isfinite(w)) {
            const double allowed = bound_factor * bound.data[row + d];
            verdict.outcome = Outcome::kFail;
            verdict.worst = WorstElement::Compared(tensor, b, h, i, d, g, w, allowed);
            verdict.max_abs = std::numeric_limits<double>::infinity();
            verdict.max_rel = verdict.max_abs;
            verdict.bound = allowed;
            verdict.message = fmt::format("{}: non-finite output {} at (b={}, h={}, i={}, d={}) where {} was expected",
                                          what, g, b, h, i, d, w);
            KeepRow(verdict.worst, got, want);
            return verdict;
          }
          const double error = std::abs(g - w);
          row_rel = std::max(row_rel, error / std::max(std::abs(w), 1e-30));
          row_error = std::max(row_error, error);
        }
        verdict.max_abs = std::max(verdict.max_abs, row_error);
        verdict.max_rel = std::max(verdict.max_rel, row_rel);
        const double row_ratio = row_error / row_allowed;
        if (row_ratio > worst_ratio || std::isnan(row_ratio)) {  // NaN: an element by element look decides
          for (int d = 0; d < dv; ++d) {
            const double g = got.data[row + d], w = want.data[row + d];
            const double error = std::abs(g - w), ratio = error / row_allowed;
            if (ratio > worst_ratio) {
              worst_ratio = ratio;
              verdict.worst = WorstElement::Compared(tensor, b, h, i, d, g, w, row_allowed);
              verdict.bound = row_allowed;
            }
          }
        }
      }
    }
  }
  if (worst_ratio > 1.0) {
    KeepRow(verdict.worst, got, want);
    const WorstElement& e = verdict.worst;
    verdict.outcome = Outcome::kFail;
    verdict.message = fmt::format(
        "{}: {}[b={}, h={}, i={}, d={}] = {:.9g}, expected {:.9g}: error {:.3g} > bound {:.3g} ({:.3g}x)",
        what, tensor, e.b, e.h, e.i, e.j, e.got, e.want, e.error, e.bound, worst_ratio);
  } else if (uninformative > 0 && (uninformative == compared || uninformative > uninformative_share * compared)) {
    // Never a pass: the declared accuracy cannot tell this row from a wrong one.
    verdict.outcome = Outcome::kSkip;
    verdict.message = fmt::format(
        "{}: tolerance uninformative on {} of {} rows: the declared accuracy allows {:.3g} on {}[b={}, h={}, i={}] "
        "whose values reach only {:.3g} (a zeroed, constant or stale row would pass)",
        what, uninformative, compared, loosest.bound, tensor, loosest.b, loosest.h, loosest.i, loosest.want);
  } else if (uninformative > 0) {  // a pass on the informative rows (uninformative_share allows the rest out)
    verdict.message = fmt::format("{}: {} of {} rows left out (tolerance uninformative there)", what, uninformative,
                                  compared);
  }
  return verdict;
}

// The query rows [B·Tq] whose full bound CheckSelf's Compare reads: rows where a
// and b differ, rows whose doubled floor is uninformative (the skip names their
// bound), and the first compared row (the worst element starts there). Every other
// selected row is bitwise equal with an informative floor: its ratio is 0 and it is
// informative whatever its bound.
std::vector<uint8_t> SelfRowsNeedingBound(const TensorD& a, const TensorD& b, const TensorD& floor,
                                          const std::vector<double>& magnitude, const std::vector<uint8_t>& row_mask) {
  const int batch = a.shape[0], heads = a.shape[1], tq = a.shape[2], dv = a.shape[3];
  std::vector<uint8_t> needed(static_cast<size_t>(batch) * tq, 0);
  bool first = true;
  for (int batch_row = 0; batch_row < batch; ++batch_row)
    for (int i = 0; i < tq; ++i) {
      const size_t row = static_cast<size_t>(batch_row) * tq + i;
      if (!row_mask.empty() && !row_mask[row]) continue;
      needed[row] = first;
      first = false;
      for (int h = 0; h < heads && !needed[row]; ++h) {
        const double row_floor = 2.0 * floor.at(batch_row, h, i, 0);
        if (dv > 0 && !Informative(row_floor, magnitude[(static_cast<size_t>(batch_row) * heads + h) * tq + i])) {
          needed[row] = 1;
        }
        for (int d = 0; d < dv && !needed[row]; ++d)
          if (!(a.at(batch_row, h, i, d) == b.at(batch_row, h, i, d))) needed[row] = 1;
      }
    }
  return needed;
}

// k·max_d|naive − oracle| + floor per row, as Oracle::WithBound, on the rows marked
// in `rows` [B·Tq] (the naive model runs on those rows only); the floor elsewhere.
TensorD BoundOnRows(const reference::Scenario& s, const TensorD& encoded_q, const TensorD& encoded_k,
                    const TensorD* bias, const Options& options, const TensorD& want, const TensorD& floor,
                    const std::vector<uint8_t>* rows) {
  const std::vector<uint8_t> visible = rows != nullptr ? VisibleOnRows(s, *rows) : s.visible;
  const TensorD naive = reference::DeclaredAttention(encoded_q, encoded_k, s.v, visible, bias, s.c.effective_scale(),
                                                     s.c.softcap, s.c.dtype, options.accuracy);
  TensorD bound = floor;
  const size_t dv = static_cast<size_t>(bound.shape[3]);
  const size_t heads = static_cast<size_t>(bound.shape[1]), tq = static_cast<size_t>(bound.shape[2]);
  for (size_t row = 0; dv > 0 && row < bound.data.size() / dv; ++row) {  // row = (b·Hq + h)·Tq + i
    if (rows != nullptr && !(*rows)[row / (heads * tq) * tq + row % tq]) continue;
    double naive_error = 0.0;
    for (size_t e = row * dv; e < (row + 1) * dv; ++e)
      naive_error = std::max(naive_error, std::isnan(naive.data[e]) ? std::numeric_limits<double>::infinity()
                                                                     : std::abs(naive.data[e] - want.data[e]));
    for (size_t e = row * dv; e < (row + 1) * dv; ++e) bound.data[e] = options.k * naive_error + floor.data[e];
  }
  return bound;
}

}  // namespace

Oracle::Oracle(const reference::Scenario& s, const Options& options) : scenario_(s), options_(options) {}
Oracle::Oracle(const reference::Scenario& s, const Options& options, const TensorD& dout)
    : scenario_(s), options_(options), dout_(&dout) {}
Oracle::~Oracle() = default;

namespace {

constexpr std::string_view kGradientNames[] = {"dq", "dk", "dv", "lse"};
constexpr double kGradientUninformativeShare = 0.25;

// Per row of t (its last axis), the largest |x|: [rows].
std::vector<double> RowMax(const TensorD& t) {
  const size_t width = static_cast<size_t>(t.shape[3]);
  std::vector<double> rows(width > 0 ? t.data.size() / width : 0, 0.0);
  for (size_t row = 0; row < rows.size(); ++row)
    for (size_t e = row * width; e < (row + 1) * width; ++e) rows[row] = std::max(rows[row], std::abs(t.data[e]));
  return rows;
}

// t with every element of a row set to value[row].
TensorD RowConstant(const TensorD& shape, const std::vector<double>& value) {
  TensorD t = shape;
  const size_t width = static_cast<size_t>(t.shape[3]);
  for (size_t row = 0; row < value.size(); ++row)
    std::fill_n(t.data.begin() + static_cast<std::ptrdiff_t>(row * width), width, value[row]);
  return t;
}

// The smallest positive normal of a dtype: f32 and bf16 2^−126, f16 2^−14.
double SmallestNormal(Dtype dtype) { return std::ldexp(1.0, dtype == Dtype::kF16 ? -14 : -126); }

// The largest |q_i|·|k_j|·scale of the scenario, q and k encoded.
double LargestDot(const TensorD& q, const TensorD& k, double scale) {
  double q_norm = 0.0, k_norm = 0.0;
  for (int b = 0; b < q.shape[0]; ++b) {
    for (int h = 0; h < q.shape[1]; ++h)
      for (int i = 0; i < q.shape[2]; ++i) q_norm = std::max(q_norm, Norm(q, b, h, i));
    for (int h = 0; h < k.shape[1]; ++h)
      for (int j = 0; j < k.shape[2]; ++j) k_norm = std::max(k_norm, Norm(k, b, h, j));
  }
  return q_norm * k_norm * scale;
}

}  // namespace

void Oracle::MakeGradientModels() {
  const reference::Scenario& s = scenario_;
  const Case& c = s.c;
  const reference::BackwardResult want = reference::Backward(s, *dout_);
  const reference::BackwardResult sums = reference::Backward(s, *dout_, std::nullopt, /*absolute=*/true);
  // softcap: 1 − tanh² from a tanh rounded in the accumulation dtype is off by up to 4·u_acc
  // absolutely (a saturated score's derivative, ~0, is not known to better than that)
  std::optional<reference::BackwardResult> unit_sums;
  if (c.softcap > 0.0) unit_sums = reference::Backward(s, *dout_, std::nullopt, true, /*unit_derivative=*/true);
  const reference::BackwardResult naive =
      reference::Backward(s, *dout_, reference::DeclaredBackwardRounding(c.dtype, options_.accuracy));
  // P below the smallest normal of the accumulation, flushed to 0 (FTZ) or gradual: each P
  // off absolutely by up to that normal, times what multiplies it (dP − δ, q, k, dO)
  const reference::BackwardResult unit_p =
      reference::Backward(s, *dout_, std::nullopt, true, /*unit_derivative=*/true, /*unit_probability=*/true);
  TensorD q, k;
  reference::EncodeQk(s, q, k);
  const double u = UnitRoundoff(c.dtype), u_acc = UnitRoundoff(options_.accuracy.pv_accum);
  const double u_score = UnitRoundoff(options_.accuracy.score_accum);
  const double dot = LargestDot(q, k, c.effective_scale());
  double max_bias = 0.0;
  if (reference::HasScoreBias(c))
    for (double x : reference::SharedBiasTensor(s)->data) max_bias = std::max(max_bias, std::abs(x));
  const double score_bound = (c.softcap > 0.0 ? std::min(dot, c.softcap) : dot) + max_bias;
  double score_error = (2.0 * std::sqrt(static_cast<double>(c.head_dim)) + 4.0) * u_score * dot;
  if (options_.accuracy.scores_in_input_dtype) score_error += 2.0 * u * score_bound;
  // P = exp(S − lse) with S and lse (≤ max|S| + log Tk) rounded in the accumulation dtype:
  // the exponent is off by u_acc·(|S| + |lse|) twice over, P relatively by as much (a key
  // whose P is tiny for every row has a gradient known only so well)
  score_error += 4.0 * u_acc * (score_bound + std::log(std::max(s.tk, 1)));
  const int longest = std::max({s.tk, s.tq * (c.q_heads / c.kv_heads), c.head_dim, c.value_dim, 1});
  // O stored in the dtype (δ = dO·O), P, dP, dS rounded where the kernel keeps them (the
  // dtype where P is declared in it), sums of `longest` terms, P moved by a score error
  const double u_mid = options_.accuracy.p_in_input_dtype ? u : u_acc;
  const double epsilon =
      u + 4.0 * u_mid + 2.0 * std::sqrt(static_cast<double>(longest)) * u_acc + 2.0 * score_error;
  // Underflow: a value below the smallest normal of the dtype or of the accumulation is
  // off absolutely, by half a subnormal under gradual underflow and by up to the smallest
  // normal where the CPU flushes subnormals to zero (XLA's CPU runtime sets FTZ/DAZ): the
  // smallest normal of the dtype and n of the accumulation's (f32 1.2e-38: no gradient a
  // kernel could get wrong lies below that).
  const double underflow = SmallestNormal(c.dtype) + longest * SmallestNormal(options_.accuracy.pv_accum);
  // (f32 and bf16 accumulation: the smallest normal 2^−126, which FTZ flushes; f16, whose
  // range no CPU flushes, the subnormal spacing 2^−24 of its gradual underflow)
  const double flushed_p = options_.accuracy.pv_accum == Dtype::kF16 ? std::ldexp(1.0, -24)
                                                                      : SmallestNormal(options_.accuracy.pv_accum);
  const TensorD* wants[] = {&want.dq, &want.dk, &want.dv};
  const TensorD* abs_sums[] = {&sums.dq, &sums.dk, &sums.dv};
  const TensorD* naives[] = {&naive.dq, &naive.dk, &naive.dv};
  {
    // "lse": the row's scores are off by score_error (a biased score also by its bias
    // stored in the dtype), log Σ exp by u_acc·(|lse| + log Tk) a few times over, and the
    // value stored in the accumulation dtype; no naive model (bound = floor)
    auto m = std::make_unique<Model>();
    m->want = want.lse;
    std::vector<double> floor = RowMax(want.lse);
    const double log_keys = std::log(std::max(s.tk, 1));
    for (double& f : floor) {
      f = score_error + u * max_bias + 4.0 * u_acc * (f + log_keys) + 2.0 * u_acc * f;
      f = std::isnan(f) ? std::numeric_limits<double>::infinity() : std::max(f, std::numeric_limits<double>::min());
    }
    m->floor = RowConstant(m->want, floor);
    m->bound = m->floor;
    // A log: an error δ scales every P recomputed from it by e^δ, so its bound is
    // judged against at least 1, not against |lse| alone (a row whose only key scores
    // 0 has lse 0, and any bound would be uninformative there)
    m->magnitude = RowMax(m->want);
    for (double& magnitude : m->magnitude) magnitude = std::max(magnitude, 1.0);
    m->has_floor = m->has_want = m->has_bound = true;
    m->uninformative_share = kGradientUninformativeShare;
    gradients_[3] = std::move(m);
  }
  for (int t = 0; t < 3; ++t) {
    auto m = std::make_unique<Model>();
    m->want = *wants[t];
    std::vector<double> floor = RowMax(*abs_sums[t]);
    const std::vector<double> result = RowMax(*wants[t]);  // the gradient rounded to the dtype once
    const TensorD* unit_ps[] = {&unit_p.dq, &unit_p.dk, &unit_p.dv};
    const std::vector<double> flush = RowMax(*unit_ps[t]);
    for (size_t row = 0; row < floor.size(); ++row)
      floor[row] = floor[row] * epsilon + 2.0 * u * result[row] + underflow + flushed_p * flush[row];
    if (unit_sums) {
      const TensorD* units[] = {&unit_sums->dq, &unit_sums->dk, &unit_sums->dv};
      const std::vector<double> unit = RowMax(*units[t]);
      for (size_t row = 0; row < floor.size(); ++row) floor[row] += 4.0 * u_acc * unit[row];
    }
    for (double& f : floor) f = std::isnan(f) ? std::numeric_limits<double>::infinity()
                                              : std::max(f, std::numeric_limits<double>::min());
    TensorD difference = m->want;
    for (size_t e = 0; e < difference.data.size(); ++e) {
      const double x = naives[t]->data[e];
      difference.data[e] = std::isnan(x) ? std::numeric_limits<double>::infinity() : x - m->want.data[e];
    }
    std::vector<double> bound = RowMax(difference);
    for (size_t row = 0; row < bound.size(); ++row) bound[row] = options_.k * bound[row] + floor[row];
    m->floor = RowConstant(m->want, floor);
    m->bound = RowConstant(m->want, bound);
    m->magnitude = RowMax(m->want);
    m->has_floor = m->has_want = m->has_bound = true;
    m->uninformative_share = kGradientUninformativeShare;
    m->flushed = SmallestNormal(c.dtype);
    gradients_[t] = std::move(m);
  }
}

Oracle::Model& Oracle::Of(std::string_view tensor) {
  for (int t = 0; t < 4; ++t) {
    if (tensor != kGradientNames[t]) continue;
    if (dout_ == nullptr) {
      throw std::invalid_argument(fmt::format("no tolerance model for tensor '{}' without an upstream gradient", tensor));
    }
    if (!gradients_[t]) MakeGradientModels();
    return *gradients_[t];
  }
  if (tensor != kOutput) throw std::invalid_argument(fmt::format("no tolerance model for tensor '{}'", tensor));
  if (!output_) output_ = std::make_unique<Model>();
  return *output_;
}

Oracle::Model& Oracle::WithFloor(std::string_view tensor) {
  Model& m = Of(tensor);
  if (m.has_floor) return m;
  reference::EncodeQk(scenario_, m.encoded_q, m.encoded_k);
  if (reference::HasScoreBias(scenario_.c)) m.bias = reference::SharedBiasTensor(scenario_);
  ComputeFloor(scenario_, m.encoded_q, m.encoded_k, m.bias.get(), options_, m.floor, m.magnitude);
  m.has_floor = true;
  return m;
}

Oracle::Model& Oracle::WithWant(std::string_view tensor) {
  Model& m = WithFloor(tensor);
  if (m.has_want) return m;
  m.want = OracleOnRows(scenario_, m.encoded_q, m.encoded_k, m.bias.get(), nullptr);
  m.has_want = true;
  return m;
}

Oracle::Model& Oracle::WithBound(std::string_view tensor) {
  Model& m = WithWant(tensor);
  if (m.has_bound) return m;
  m.bound = BoundOnRows(scenario_, m.encoded_q, m.encoded_k, m.bias.get(), options_, m.want, m.floor, nullptr);
  m.encoded_q = TensorD();  // the naive model was their last user
  m.encoded_k = TensorD();
  m.bias.reset();
  m.has_bound = true;
  return m;
}

Verdict Oracle::Check(const TensorD& got, const std::vector<uint8_t>& row_mask, std::string_view what,
                      std::string_view tensor) {
  const Model& m = WithBound(tensor);
  return Compare(got, m.want, m.bound, m.floor, 1.0, m.magnitude, row_mask, what, tensor, m.uninformative_share,
                 m.flushed);
}

Verdict Oracle::CheckOutcome(const TensorD& got, const std::vector<uint8_t>& row_mask, std::string_view what,
                             std::string_view tensor) {
  // k·max|naive − oracle| ≥ 0, so an output within the floor alone is within the
  // full bound too; the floor's own pass needs every row's floor informative, so it
  // still tells every row from a zeroed, constant or stale one.
  if (options_.k >= 0.0) {
    const Model& m = WithWant(tensor);
    Verdict v = Compare(got, m.want, m.floor, m.floor, 1.0, m.magnitude, row_mask, what, tensor,
                        m.uninformative_share, m.flushed);
    if (v.passed()) return v;
  }
  return Check(got, row_mask, what, tensor);
}

Verdict Oracle::CheckSelf(const TensorD& a, const TensorD& b, const std::vector<uint8_t>& row_mask,
                          std::string_view what, std::string_view tensor) {
  if (BitwiseEqualRows(a, b, row_mask)) return Verdict::Pass();
  Model& m = WithFloor(tensor);
  if (m.has_bound) {
    return Compare(a, b, m.bound, m.floor, 2.0, m.magnitude, row_mask, what, tensor, m.uninformative_share,
                   m.flushed);
  }
  // The oracle and the naive model only on the rows Compare reads the bound of: the
  // verdict is the one the full bound gives.
  const std::vector<uint8_t> rows = SelfRowsNeedingBound(a, b, m.floor, m.magnitude, row_mask);
  TensorD want_on_rows;
  if (!m.has_want) want_on_rows = OracleOnRows(scenario_, m.encoded_q, m.encoded_k, m.bias.get(), &rows);
  const TensorD& want = m.has_want ? m.want : want_on_rows;
  const TensorD bound = BoundOnRows(scenario_, m.encoded_q, m.encoded_k, m.bias.get(), options_, want, m.floor, &rows);
  return Compare(a, b, bound, m.floor, 2.0, m.magnitude, row_mask, what, tensor, m.uninformative_share,
                 m.flushed);
}

RowErrors Oracle::MeasureRows(const TensorD& got, const std::vector<uint8_t>& row_mask, std::string_view what,
                              std::string_view tensor) {
  const Model& m = WithBound(tensor);
  return MeasureRowErrors(got, m.want, m.bound, 1.0, row_mask, what);
}

RowErrors Oracle::MeasureSelfRows(const TensorD& a, const TensorD& b, const std::vector<uint8_t>& row_mask,
                                  std::string_view what, std::string_view tensor) {
  return MeasureRowErrors(a, b, WithBound(tensor).bound, 2.0, row_mask, what);
}

const TensorD& Oracle::Want(std::string_view tensor) { return WithWant(tensor).want; }
const TensorD& Oracle::Floor(std::string_view tensor) { return WithFloor(tensor).floor; }
const TensorD& Oracle::Bound(std::string_view tensor) { return WithBound(tensor).bound; }
const std::vector<double>& Oracle::Magnitude(std::string_view tensor) { return WithFloor(tensor).magnitude; }
bool Oracle::oracle_computed() const { return output_ && output_->has_want; }
bool Oracle::naive_computed() const { return output_ && output_->has_bound; }

}  // namespace attncheck
