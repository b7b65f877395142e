// Law 4, RoPE relative-score equality (DESIGN §6): after rotation, q·k depends only
// on n − m. Checked on the adapter's rotation stage:
//   (a) the rotation equals the reference R(p)x with the stated layout
//       (interleaved / half-split), rotary dim and scaling: a position-blind kernel,
//       a swapped layout or a rotated tail fails here, and the message says which;
//   (b) metamorphic, independent of our conventions: shifting both positions by s
//       leaves every score q_m·k_n unchanged;
//   (c) norms are preserved (times the YaRN magnitude factor).
// Adapters that own RoPE only inside attention get (b) at the attention level.
// Bound: (8u + 8·2^−24·(p + 1))·|x| per rotated vector — output rounding of the
// dtype plus angles p·θ computed in float (DESIGN §6).
#include <cmath>
#include <fmt/format.h>

#include "properties/law_run.h"
#include "properties/law_support.h"
#include "properties/tolerance.h"
#include "reference/positional.h"
#include "reference/rope_scaling.h"

namespace attncheck {
namespace {

using reference::Scenario;

double RowNorm(const TensorD& t, int b, int h, int i) {
  double sum = 0.0;
  for (int d = 0; d < t.shape[3]; ++d) sum += t.at(b, h, i, d) * t.at(b, h, i, d);
  return std::sqrt(sum);
}

double RotationBound(Dtype dtype, int position, double norm) {
  return (8.0 * UnitRoundoff(dtype) + 8.0 * std::ldexp(1.0, -24) * (position + 1.0)) * norm + 1e-30;
}

std::vector<int> Shifted(const std::vector<int>& positions, int shift) {
  std::vector<int> out = positions;
  for (int& p : out) p += shift;
  return out;
}

// The reference rotation of x at positions (key side: no log-n query scaling).
TensorD ReferenceRotation(const Case& c, const TensorD& x, const std::vector<int>& positions, int length) {
  TensorD out = x;
  reference::ApplyPositional(c, reference::Side::kKey, out, positions, length);
  return out;
}

// x: "q" or "k" (`tensor`), [B, H, T, D].
Verdict CheckRotation(const Case& c, const TensorD& x, const std::vector<int>& positions, const TensorD& got,
                      int length, std::string_view tensor, std::string_view what) {
  const TensorD want = ReferenceRotation(c, x, positions, length);
  WorstElement worst;
  double max_abs = 0.0, worst_bound = 0.0, worst_ratio = 0.0;
  for (int b = 0; b < x.shape[0]; ++b)
    for (int h = 0; h < x.shape[1]; ++h)
      for (int t = 0; t < x.shape[2]; ++t) {
        const int p = positions[static_cast<size_t>(b) * x.shape[2] + t];
        const double bound = RotationBound(c.dtype, p, RowNorm(x, b, h, t));
        for (int d = 0; d < x.shape[3]; ++d) {
          const double g = got.at(b, h, t, d), w = want.at(b, h, t, d), error = std::abs(g - w);
          max_abs = std::max(max_abs, error);
          if (!std::isfinite(g) || error / bound > worst_ratio) {
            worst_ratio = std::isfinite(g) ? error / bound : INFINITY;
            worst = WorstElement::Compared(tensor, b, h, t, d, g, w, bound);
            worst_bound = bound;
          }
        }
      }
  if (worst_ratio <= 1.0) return Verdict::Pass();
  // Say which convention the kernel seems to follow instead.
  std::string hint;
  Case other = c;
  other.encoding.rope.layout = c.encoding.rope.layout == RopeLayout::kHalfSplit ? RopeLayout::kInterleaved
                                                                                  : RopeLayout::kHalfSplit;
  const TensorD other_want = ReferenceRotation(other, x, positions, length);
  bool matches_other = true, matches_unrotated = true;
  for (size_t e = 0; e < got.data.size(); ++e) {
    const double tolerance = 1e-3 * (1.0 + std::abs(x.data[e]));
    matches_other = matches_other && std::abs(got.data[e] - other_want.data[e]) <= tolerance;
    matches_unrotated = matches_unrotated && std::abs(got.data[e] - x.data[e]) <= tolerance;
  }
  if (matches_other) hint = fmt::format("; the output matches the {} layout instead", Name(other.encoding.rope.layout));
  else if (matches_unrotated) hint = "; the output equals the unrotated input (positions ignored)";
  const WorstElement& e = worst;
  return Verdict::Fail(
      fmt::format("{}: rotated x[b={}, h={}, t={}, d={}] at position {} = {:.9g}, expected {:.9g} ({}, rotary_dim "
                  "{}, scaling {}): error {:.3g} > bound {:.3g}{}",
                  what, e.b, e.h, e.i, e.j, positions[static_cast<size_t>(e.b) * x.shape[2] + e.i], e.got, e.want,
                  Name(c.encoding.rope.layout), c.rotary_dim(), Name(c.encoding.rope.scaling), e.error, e.bound,
                  hint),
      worst, max_abs, worst_bound)
      .At(fmt::format("rotation of {} vs reference", what), Role::kNumeric);
}

// Scores q_rot[b,h,i]·k_rot[b,kv,j] for all pairs, [B, Hq, Tq, Tk].
TensorD Scores(const TensorD& q, const TensorD& k) {
  const int group = q.shape[1] / k.shape[1];
  TensorD s(q.shape[0], q.shape[1], q.shape[2], k.shape[2]);
  for (int b = 0; b < q.shape[0]; ++b)
    for (int h = 0; h < q.shape[1]; ++h)
      for (int i = 0; i < q.shape[2]; ++i)
        for (int j = 0; j < k.shape[2]; ++j) {
          double dot = 0.0;
          for (int d = 0; d < q.shape[3]; ++d) dot += q.at(b, h, i, d) * k.at(b, h / group, j, d);
          s.at(b, h, i, j) = dot;
        }
  return s;
}

Verdict AttentionLevelShift(LawRun& law, const Case& c, const Options& options) {
  if (c.encoding.rope.scaling == RopeScaling::kDynamicNtk || c.encoding.rope.log_n)
    return Verdict::Skip("dynamic NTK and log-n depend on absolute length; no rotation stage to test alone");
  law.Use(reference::MakeScenario(c));
  const Scenario& s = law.scenario();
  Case shifted_case = c;
  const int shift = 1 + static_cast<int>(c.seed % 997);
  for (RowSpec& row : shifted_case.rows) row.position_offset += shift;
  Scenario shifted = reference::MakeScenario(shifted_case);
  shifted.q = s.q;
  shifted.k = s.k;
  shifted.v = s.v;
  if (!law.Start()) return law.stop();
  const std::optional<AdapterRun> run = law.Attend(shifted);
  if (!run) return law.stop();
  Oracle oracle(shifted, options);
  Verdict v = oracle.CheckSelf(run->out, law.base().out, RealNonEmptyRows(s),
                               fmt::format("attention with every position shifted by {}", shift));
  if (!v.passed()) v.At("attention with every position shifted", Role::kNumeric);
  return v;
}

}  // namespace

Verdict check_rope_relative(Adapter& adapter, const Case& c, const Options& options) {
  if (c.encoding.kind != EncodingKind::kRope) return Verdict::Skip("case has no RoPE encoding");
  LawRun law(check_rope_relative, adapter);
  if (!law.Supports(c)) return law.stop();
  const Capabilities caps = adapter.capabilities();
  if (!caps.has_rope_stage) {
    if (!caps.owns_rope) return Verdict::Skip("adapter does not apply RoPE (the harness applies the reference)");
    return AttentionLevelShift(law, c, options);
  }
  law.Use(reference::MakeScenario(c));
  const Scenario& s = law.scenario();
  const int length = s.length_seen();

  // (a) rotation against the reference, keys and queries
  const AdapterRun k_rot = RunRope(adapter, c, s.k, s.key_positions, length);
  if (!k_rot.ok()) return law.Fault(k_rot);
  if (Verdict v = CheckRotation(c, s.k, s.key_positions, k_rot.out, length, "k", "keys"); !v.passed()) return v;
  const AdapterRun q_rot = RunRope(adapter, c, s.q, s.query_positions, length);
  if (!q_rot.ok()) return law.Fault(q_rot);
  if (Verdict v = CheckRotation(c, s.q, s.query_positions, q_rot.out, length, "q", "queries"); !v.passed()) return v;

  // (b) shift both positions: every score unchanged
  const int shift = (c.seed % 2 == 0) ? 1 : 1000 + static_cast<int>(c.seed % 37);
  const std::vector<int> q_shifted = Shifted(s.query_positions, shift), k_shifted = Shifted(s.key_positions, shift);
  const AdapterRun q_rot2 = RunRope(adapter, c, s.q, q_shifted, length);
  const AdapterRun k_rot2 = RunRope(adapter, c, s.k, k_shifted, length);
  if (!q_rot2.ok()) return law.Fault(q_rot2);
  if (!k_rot2.ok()) return law.Fault(k_rot2);
  const TensorD scores = Scores(q_rot.out, k_rot.out), shifted_scores = Scores(q_rot2.out, k_rot2.out);
  const reference::RopeFrequencies freqs = reference::Frequencies(c.encoding.rope, c.rotary_dim(), length);
  const int group = c.q_heads / c.kv_heads;
  for (int b = 0; b < s.batch; ++b)
    for (int h = 0; h < c.q_heads; ++h)
      for (int i = 0; i < s.tq; ++i)
        for (int j = 0; j < s.tk; ++j) {
          const int p = std::max(q_shifted[RowIndex(s, b, i)], k_shifted[static_cast<size_t>(b) * s.tk + j]);
          const double bound = 2.0 * RotationBound(c.dtype, p, RowNorm(s.q, b, h, i)) *
                               RowNorm(s.k, b, h / group, j) * freqs.mscale * freqs.mscale * 2.0;
          const double error = std::abs(scores.at(b, h, i, j) - shifted_scores.at(b, h, i, j));
          if (!(error <= bound)) {
            return Verdict::Fail(
                fmt::format("score q·k of query i={} (position {}) and key j={} (position {}) = {:.9g} changed to "
                            "{:.9g} when both positions were shifted by {}: error {:.3g} > bound {:.3g} (not a "
                            "function of n − m)",
                            i, s.query_positions[RowIndex(s, b, i)], j,
                            s.key_positions[static_cast<size_t>(b) * s.tk + j], scores.at(b, h, i, j),
                            shifted_scores.at(b, h, i, j), shift, error, bound),
                WorstElement::Compared("score", b, h, i, j, shifted_scores.at(b, h, i, j), scores.at(b, h, i, j),
                                       bound),
                error, bound)
                .At("scores with both positions shifted", Role::kNumeric);
          }
        }

  // (c) norms preserved: the rotated dims scale by the magnitude factor, the
  //     pass-through tail (partial rotary) is untouched
  const int rotary_dim = c.rotary_dim();
  for (int b = 0; b < s.batch; ++b)
    for (int h = 0; h < c.kv_heads; ++h)
      for (int t = 0; t < s.tk; ++t) {
        double rotated_before = 0.0, rotated_after = 0.0;
        for (int d = 0; d < rotary_dim; ++d) {
          rotated_before += s.k.at(b, h, t, d) * s.k.at(b, h, t, d);
          rotated_after += k_rot.out.at(b, h, t, d) * k_rot.out.at(b, h, t, d);
        }
        const double before = std::sqrt(rotated_before) * freqs.mscale, after = std::sqrt(rotated_after);
        const double bound =
            std::sqrt(static_cast<double>(c.head_dim)) *
            RotationBound(c.dtype, s.key_positions[static_cast<size_t>(b) * s.tk + t], RowNorm(s.k, b, h, t));
        if (!(std::abs(before - after) <= bound)) {
          return Verdict::Fail(
              fmt::format("rotation changed the norm of the rotated dims of key (b={}, h={}, t={}): {:.9g} -> {:.9g}",
                          b, h, t, before, after),
              WorstElement::Compared("k", b, h, t, -1, after, before, bound))
              .At("norm of the rotated dims", Role::kNumeric);
        }
      }
  return Verdict::Pass();
}

}  // namespace attncheck
