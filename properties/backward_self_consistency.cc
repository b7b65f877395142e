// backward-self-consistency (DESIGN §6, the backward pass): the kernel's gradient is
// the derivative of the kernel's own forward. With L(x) = ⟨dO, attention(x)⟩ through
// the adapter's forward and g its backward under dO, along a direction Δ of x = (q, k, v)
//   D₁ = L(x + Δ) − L(x − Δ)  must equal  2⟨g, Δ⟩  within
//   tol = E(x + Δ) ⊕ E(x − Δ)                 the forward's rounding of L at both points
//       + 4·|ĉ₃| + 2·(E₂ ⊕ 2E₁)/12             the central difference's truncation
//       + G                                   the backward's own rounding
// ⊕ adding in quadrature. E(y) is the forward tolerance model at y (tolerance.h bound_out)
// weighted by |dO|: per output row the worst case Σ_d |dO|·bound, the rows in quadrature;
// G the same of 2·|Δ|·bound_g with the gradient tolerance model. ĉ₃ = (D₂ − 2D₁)/12, D₂
// the difference at ±2Δ, is the cubic term of the Taylor series (D₁ = 2⟨∇L, Δ⟩ + 2c₃ + 2c₅
// …, D₂ = 4⟨∇L, Δ⟩ + 16c₃ …) estimated from the forward alone, so a wrong gradient cannot
// widen it; the score step at ±2Δ is held under 1/4, where c₅ is small beside c₃. The
// verdict compares the kernel with itself: the reference enters only as the magnitudes of
// the tolerance models.
// Inputs stay in the case dtype: each element's step is realised (x ± Δ and x ± 2Δ exactly
// representable, else it does not move); q and k are the encoded ones the backward
// differentiated (q/k encodings applied by the harness, then none). An element moves by a
// random 1/4 to 1 of its step, signed as the kernel's gradient there (random where it is
// 0): a random-signed sum of N terms grows as √N against the rounding's N, and hides the
// signal in bf16. Directions: q of the real rows; k, then v, of the keys an anchor row
// sees; k and v of the keys it cannot see; all of q, k and v. One counts when
// tol ≤ |2⟨g, Δ⟩|/3 (a zeroed gradient along it fails); a pass needs one where the dq, dk
// part of 2⟨g, Δ⟩ exceeds tol (zeroed dq and dk fail, and so do dq and dk without a softmax
// scale ≤ 1/2: off by 1/scale − 1 ≥ 1 times that part), or a score path without a measurable derivative
// (q alone and k alone: the forward's difference and 2⟨g, Δ⟩ both within the tolerance,
// as for a row with one visible key); else the score path, where the softmax scale
// lives, goes unchecked: a skip that says so, as none counting is.
#include <cmath>
#include <fmt/format.h>
#include <random>

#include "properties/backward_support.h"
#include "properties/law_run.h"
#include "properties/law_support.h"
#include "reference/attention.h"
#include "reference/data.h"
#include "reference/positional.h"

namespace attncheck {
namespace {

using reference::Scenario;

// The largest score step allowed at ±2Δ, and the informative share of 2⟨g, Δ⟩ (a zeroed
// gradient fails by 3×, one without the softmax scale 1/√D, D ≥ 2, by 1.2× at least).
constexpr double kMaxScoreStep = 0.25;
constexpr double kInformative = 1.0 / 3;

// The first relative step of q and k (of v: kValueStep, fixed): halved until the score
// step at ±2Δ is at most kMaxScoreStep (v moves no score: L is linear in v), so the
// signal stands far above the forward's rounding while the truncation stays estimable
// (at a score step of 1/2, eigen failed 1 case in 300: the c₅ term was no longer small).
constexpr double kFirstStep = 0.5, kValueStep = 1.0;

enum class Moves { kQ, kSeenK, kSeenV, kHiddenKv, kAll };
constexpr Moves kDirections[] = {Moves::kQ, Moves::kSeenK, Moves::kSeenV, Moves::kHiddenKv, Moves::kAll};

std::string_view Name(Moves m) {
  switch (m) {
    case Moves::kQ: return "q of the real rows";
    case Moves::kSeenK: return "k of the keys the anchor rows see";
    case Moves::kSeenV: return "v of the keys the anchor rows see";
    case Moves::kAll: return "q, k and v together";
    default: return "k and v of the keys the anchor rows cannot see";
  }
}

// The scenario the backward differentiated: q and k encoded and in the dtype, no q/k encoding left.
Scenario Encoded(const Scenario& s) {
  Scenario x = s;
  reference::EncodeQk(s, x.q, x.k);
  for (TensorD* t : {&x.q, &x.k, &x.v})
    for (double& e : t->data) e = reference::RoundTo(s.c.dtype, e);
  if (reference::HasQkEncoding(s.c)) x.c.encoding.kind = EncodingKind::kNone;
  return x;
}

struct Direction {
  TensorD dq, dk, dv;  // Δ, in the shapes of q, k, v
  bool moves = false;
};

double Rms(const TensorD& t) {
  double sum = 0.0;
  for (double e : t.data) sum += e * e;
  return t.data.empty() || sum == 0.0 ? 1.0 : std::sqrt(sum / t.data.size());
}

// A realised step of x toward x + target: x ± Δ and x ± 2Δ all in the dtype, else 0.
double RealisedStep(Dtype dtype, double x, double target) {
  const double step = reference::RoundTo(dtype, x + target) - x;
  for (double m : {-1.0, 2.0, -2.0})
    if (reference::RoundTo(dtype, x + m * step) != x + m * step || !std::isfinite(x + m * step)) return 0.0;
  return step;
}

// The largest |ΔS| over visible (b, h, i, j) of real rows at x + 2Δ.
double ScoreStep(const Scenario& x, const Direction& d) {
  const int group = x.c.q_heads / x.c.kv_heads, dim = x.c.head_dim;
  const double scale = x.c.effective_scale();
  double worst = 0.0;
  for (int b = 0; b < x.batch; ++b)
    for (int h = 0; h < x.c.q_heads; ++h)
      for (int i = 0; i < x.tq; ++i) {
        if (x.empty_row[RowIndex(x, b, i)]) continue;
        for (int j = 0; j < x.tk; ++j) {
          if (!x.is_visible(b, i, j)) continue;
          double step = 0.0;
          for (int e = 0; e < dim; ++e) {
            const double q = x.q.at(b, h, i, e), k = x.k.at(b, h / group, j, e);
            const double dq = 2.0 * d.dq.at(b, h, i, e), dk = 2.0 * d.dk.at(b, h / group, j, e);
            step += dq * k + q * dk + dq * dk;
          }
          worst = std::max(worst, std::abs(scale * step));
        }
      }
  return worst;
}

// The direction `m`, its step shrunk until the score step at ±2Δ is at most kMaxScoreStep.
Direction MakeDirection(const Scenario& x, const AdapterRun& g, Moves m, const std::vector<int>& anchor,
                        uint64_t seed) {
  const Dtype dtype = x.c.dtype;
  const double rms_q = Rms(x.q), rms_k = Rms(x.k), rms_v = Rms(x.v);
  for (double h = kFirstStep; h > 0x1p-30; h /= 2) {
    std::mt19937_64 rng(seed * 4 + static_cast<uint64_t>(m));
    std::uniform_real_distribution<double> unit(0.25, 1.0);
    Direction d{TensorD(x.q.shape[0], x.q.shape[1], x.q.shape[2], x.q.shape[3]),
                TensorD(x.k.shape[0], x.k.shape[1], x.k.shape[2], x.k.shape[3]),
                TensorD(x.v.shape[0], x.v.shape[1], x.v.shape[2], x.v.shape[3])};
    auto move = [&](const TensorD& from, const TensorD& grad, TensorD& to, int b, int head, int row, double rms) {
      const double relative = &to == &d.dv ? kValueStep : h;  // v moves no score
      for (int e = 0; e < from.shape[3]; ++e) {
        const double slope = grad.at(b, head, row, e), magnitude = relative * rms * unit(rng);
        const double sign = slope > 0.0 ? 1.0 : slope < 0.0 ? -1.0 : (rng() & 1) ? 1.0 : -1.0;
        const double step = RealisedStep(dtype, from.at(b, head, row, e), sign * magnitude);
        to.at(b, head, row, e) = step;
        d.moves = d.moves || step != 0.0;
      }
    };
    for (int b = 0; b < x.batch; ++b) {
      if (m == Moves::kQ || m == Moves::kAll) {
        for (int h_q = 0; h_q < x.c.q_heads; ++h_q)
          for (int i = 0; i < x.tq; ++i)
            if (!x.empty_row[RowIndex(x, b, i)] && x.query_valid[RowIndex(x, b, i)])
              move(x.q, g.dq, d.dq, b, h_q, i, rms_q);
        if (m == Moves::kQ) continue;
      }
      if (anchor[b] < 0 && m != Moves::kAll) continue;
      for (int j = 0; j < x.tk; ++j) {
        const bool seen = anchor[b] >= 0 && x.is_visible(b, anchor[b], j);
        if (m != Moves::kAll && seen != (m != Moves::kHiddenKv)) continue;
        for (int kv = 0; kv < x.c.kv_heads; ++kv) {
          if (m != Moves::kSeenV) move(x.k, g.dk, d.dk, b, kv, j, rms_k);
          if (m != Moves::kSeenK) move(x.v, g.dv, d.dv, b, kv, j, rms_v);
        }
      }
    }
    if (!d.moves || ScoreStep(x, d) <= kMaxScoreStep) return d;
  }
  return {};
}

Scenario Shifted(const Scenario& x, const Direction& d, double m) {
  Scenario y = x;
  for (auto [t, step] : {std::pair{&y.q, &d.dq}, {&y.k, &d.dk}, {&y.v, &d.dv}})
    for (size_t e = 0; e < t->data.size(); ++e) t->data[e] += m * step->data[e];
  return y;
}

// ⟨dO, out⟩ and its rounding over the elements with upstream gradient (a row with none
// may be NaN under the masked-row policy): per output row (b, h, i) the worst case
// Σ_d |dO|·bound_out, the rows combined in quadrature (each row rounds its own sums;
// the worst case over every row at once is 100–1000× the error measured in bf16 and
// hides any signal); nullopt where such an element is not finite.
struct Loss {
  double value = 0.0, noise = 0.0;
};
std::optional<Loss> LossAt(const TensorD& out, const TensorD& bound, const TensorD& dout) {
  Loss loss;
  const size_t dv = static_cast<size_t>(dout.shape[3]);
  for (size_t row = 0; dv > 0 && row < dout.data.size() / dv; ++row) {
    double row_noise = 0.0;
    for (size_t e = row * dv; e < (row + 1) * dv; ++e) {
      if (dout.data[e] == 0.0) continue;
      if (!std::isfinite(out.data[e])) return std::nullopt;
      loss.value += dout.data[e] * out.data[e];
      row_noise += std::abs(dout.data[e]) * bound.data[e];
    }
    loss.noise += row_noise * row_noise;
  }
  loss.noise = std::sqrt(loss.noise);
  return loss;
}

}  // namespace

Verdict check_backward_self_consistency(Adapter& adapter, const Case& c, const Options& options) {
  LawRun law(check_backward_self_consistency, adapter);
  if (!law.Open(c)) return law.stop();
  const Scenario& s = law.scenario();
  const AdapterRun& g = law.base();
  const TensorD& dout = law.upstream();
  const Scenario x = Encoded(s);
  Oracle gradient_model(s, options, dout);
  for (const char* name : {"dq", "dk", "dv"})
    if (std::optional<Verdict> beyond = BeyondRange(gradient_model, name, "self-consistency")) return *beyond;
  std::vector<int> anchor(s.batch);
  for (int b = 0; b < s.batch; ++b) anchor[b] = AnchorFor(DistinctVisibleRows(s, b), 1, c.seed);

  int informative = 0;
  Verdict nearest_bound = Verdict::Pass();
  bool scores_checked = false;  // along an informative direction, zeroing dq and dk would fail
  bool scores_silent = true;    // along q alone and k alone, neither side measures a change
  std::string_view closest = "the gradient is 0 along each";
  double closest_ratio = std::numeric_limits<double>::infinity();
  for (Moves m : kDirections) {
    const Direction d = MakeDirection(x, g, m, anchor, c.seed);
    if (!d.moves) continue;
    // 2⟨g, Δ⟩ and the backward's rounding: per gradient row 2·Σ_d|Δ|·bound_g, the rows in quadrature (as L's)
    double predicted = 0.0, through_scores = 0.0, backward_noise = 0.0;  // through_scores: the dq, dk part
    for (auto [name, step] : {std::pair{"dq", &d.dq}, {"dk", &d.dk}, {"dv", &d.dv}}) {
      const TensorD& grad = g.tensor(name);
      const TensorD* bound = nullptr;
      const size_t row_length = static_cast<size_t>(step->shape[3]);
      double row_noise = 0.0;
      for (size_t e = 0; e < step->data.size(); ++e) {
        if (row_length > 0 && e % row_length == 0) {
          backward_noise += row_noise * row_noise;
          row_noise = 0.0;
        }
        if (step->data[e] == 0.0) continue;
        if (!std::isfinite(grad.data[e])) {
          // the element, against the reference's gradient there (a NaN from a row with no
          // visible key is then recognised: laws.h RunLaw, NanFromEmptyRowsIsAHazard)
          const int w3 = step->shape[3], w2 = step->shape[2], w1 = step->shape[1];
          const int at = static_cast<int>(e);
          const WorstElement worst = WorstElement::Compared(name, at / (w3 * w2 * w1), (at / (w3 * w2)) % w1,
                                                            (at / w3) % w2, at % w3, grad.data[e],
                                                            gradient_model.Want(name).data[e], 0.0);
          Verdict v = Verdict::Fail(fmt::format("{} is {} at an element the direction ({}) moves: no derivative of a "
                                                "finite forward is",
                                                name, grad.data[e], Name(m)),
                                    worst, worst.error);
          return v.At("gradient vs the forward's finite difference", Role::kNumeric);
        }
        if (bound == nullptr) bound = &gradient_model.Bound(name);
        predicted += 2.0 * grad.data[e] * step->data[e];
        if (step != &d.dv) through_scores += 2.0 * grad.data[e] * step->data[e];
        row_noise += 2.0 * std::abs(step->data[e]) * bound->data[e];
      }
      backward_noise += row_noise * row_noise;
    }
    backward_noise = std::sqrt(backward_noise);
    // L at ±Δ and ±2Δ through the adapter's forward
    Loss at[4];
    const double multiples[4] = {1.0, -1.0, 2.0, -2.0};
    for (int p = 0; p < 4; ++p) {
      const Scenario y = Shifted(x, d, multiples[p]);
      const std::optional<AdapterRun> run = law.Attend(y, fmt::format(" (forward at x {:+g}Δ)", multiples[p]));
      if (!run) return law.stop();
      Oracle forward_model(y, options);
      const std::optional<Loss> loss = LossAt(run->out, forward_model.Bound(), dout);
      if (!loss) {
        return Verdict::Skip(fmt::format(
            "the forward is not finite on a row with upstream gradient at x {:+g}Δ (along {}): no finite difference",
            multiples[p], Name(m)));
      }
      at[p] = *loss;
    }
    const double d1 = at[0].value - at[1].value, d2 = at[2].value - at[3].value;
    // the two points round independently: their errors add in quadrature too
    const double e1 = std::hypot(at[0].noise, at[1].noise), e2 = std::hypot(at[2].noise, at[3].noise);
    // |2c₃| ≤ 2|ĉ₃| + 2·noise(ĉ₃); twice that for c₅ and beyond
    const double cubic = std::abs(d2 - 2.0 * d1) / 12.0, cubic_noise = std::hypot(e2, 2.0 * e1) / 12.0;
    const double truncation = 4.0 * cubic + 2.0 * cubic_noise;
    const double tolerance = e1 + truncation + backward_noise;
    const double error = std::abs(d1 - predicted);
    if (!(error <= tolerance)) {
      Verdict v = Verdict::Fail(
          fmt::format("along {}: the forward's difference L(x+Δ) − L(x−Δ) = {:.9g} but 2⟨gradient, Δ⟩ = {:.9g} "
                      "(|error| {:.3g} > tolerance {:.3g}: forward rounding {:.3g}, truncation {:.3g}, backward "
                      "rounding {:.3g})",
                      Name(m), d1, predicted, error, tolerance, e1, truncation, backward_noise),
          WorstElement{}, error);
      return v.At("gradient vs the forward's finite difference", Role::kNumeric);
    }
    if (m == Moves::kQ || m == Moves::kSeenK) {
      scores_silent = scores_silent && std::abs(d1) <= tolerance && std::abs(predicted) <= tolerance;
    }
    const double ratio = predicted == 0.0 ? std::numeric_limits<double>::infinity() : tolerance / std::abs(predicted);
    if (ratio <= kInformative) {
      ++informative;
      Verdict measured = Verdict::Pass();  // the gate's worst error / bound: |error| against the tolerance
      measured.max_abs = error;
      measured.bound = tolerance;
      KeepCloser(nearest_bound, std::move(measured));
      scores_checked = scores_checked || tolerance < std::abs(through_scores);
    } else if (ratio < closest_ratio) {
      closest_ratio = ratio;
      closest = Name(m);
    }
  }
  if (informative == 0) {
    return Verdict::Skip(fmt::format("no direction is informative (the tolerance exceeds a third of 2⟨g, Δ⟩ along "
                                     "each; closest: {})",
                                     closest));
  }
  if (!scores_checked && !scores_silent) {
    return Verdict::Skip(
        "only the part through v is informative: dq and dk (the score path) go unchecked (the tolerance exceeds "
        "their part of 2⟨g, Δ⟩ along each informative direction)");
  }
  return nearest_bound;
}

}  // namespace attncheck
