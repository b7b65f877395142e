// backward-self-consistency (DESIGN §6, the backward pass): the kernel's gradient is
// the derivative of the kernel's own forward. With L(x) = ⟨dO, attention(x)⟩ through
// the adapter's forward and g its backward under dO, along a direction Δ of x = (q, k, v)
//   D₁ = L(x + Δ) − L(x − Δ)  must equal  2⟨g, Δ⟩  within
//   tol = E(x + Δ) + E(x − Δ)                     the forward's rounding of L at both points
//       + 4·(|ĉ₃| + (E₂ + 2E₁)/12)                 the central difference's truncation
//       + 2·Σ|Δ|·bound_g                          the backward's own rounding
// E(y) = Σ|dO|·bound_out(y) (the forward tolerance model at y), bound_g the gradient
// tolerance model (tolerance.h), ĉ₃ = (D₂ − 2D₁)/12 with D₂ the difference at ±2Δ: the
// cubic term of the Taylor series (D₁ = 2⟨∇L, Δ⟩ + 2c₃ + 2c₅ …, D₂ = 4⟨∇L, Δ⟩ + 16c₃ …),
// estimated from the forward alone, so a wrong gradient cannot widen it; the score step
// at ±2Δ is held under 1/4, where c₅ is small beside c₃. The verdict compares the kernel
// with itself: the reference enters only as the magnitudes of the tolerance models.
// Inputs stay in the case dtype: Δ is a realised step, each element's x ± Δ and x ± 2Δ
// exactly representable (else that element does not move), q and k the encoded ones the
// backward differentiated (RoPE and other q/k encodings applied by the harness).
// Directions: q of the real rows, k of the keys an anchor row sees, v of the same keys,
// k and v of the keys it cannot see. A direction counts when tol ≤ |2⟨g, Δ⟩|/4 (a
// zeroed or scale-less gradient along it fails); none counting is a skip.
#include <cmath>
#include <fmt/format.h>
#include <random>
#include <cstdlib>

#include "properties/backward_support.h"
#include "properties/law_run.h"
#include "properties/law_support.h"
#include "reference/attention.h"
#include "reference/data.h"
#include "reference/positional.h"

namespace attncheck {
namespace {

using reference::Scenario;

// The largest score step allowed at ±2Δ, and the informative share of 2⟨g, Δ⟩.
constexpr double kMaxScoreStep = 0.25;
constexpr double kInformative = 0.25;

// The first relative step: halved until the score step at ±2Δ is at most kMaxScoreStep (v
// moves no score: L is linear in v, and the step stays), so the signal stands far above
// the forward's rounding in every dtype while the truncation stays estimable.
constexpr double kFirstStep = 0.5;

enum class Moves { kQ, kSeenK, kSeenV, kHiddenKv };
constexpr Moves kDirections[] = {Moves::kQ, Moves::kSeenK, Moves::kSeenV, Moves::kHiddenKv};

std::string_view Name(Moves m) {
  switch (m) {
    case Moves::kQ: return "q of the real rows";
    case Moves::kSeenK: return "k of the keys the anchor rows see";
    case Moves::kSeenV: return "v of the keys the anchor rows see";
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
Direction MakeDirection(const Scenario& x, Moves m, const std::vector<int>& anchor, uint64_t seed) {
  const Dtype dtype = x.c.dtype;
  const double rms_q = Rms(x.q), rms_k = Rms(x.k), rms_v = Rms(x.v);
  for (double h = kFirstStep; h > 0x1p-30; h /= 2) {
    std::mt19937_64 rng(seed * 4 + static_cast<uint64_t>(m));
    std::uniform_real_distribution<double> unit(-1.0, 1.0);
    Direction d{TensorD(x.q.shape[0], x.q.shape[1], x.q.shape[2], x.q.shape[3]),
                TensorD(x.k.shape[0], x.k.shape[1], x.k.shape[2], x.k.shape[3]),
                TensorD(x.v.shape[0], x.v.shape[1], x.v.shape[2], x.v.shape[3])};
    auto move = [&](const TensorD& from, TensorD& to, int b, int head, int row, double rms) {
      for (int e = 0; e < from.shape[3]; ++e) {
        const double step = RealisedStep(dtype, from.at(b, head, row, e), h * rms * unit(rng));
        to.at(b, head, row, e) = step;
        d.moves = d.moves || step != 0.0;
      }
    };
    for (int b = 0; b < x.batch; ++b) {
      if (m == Moves::kQ) {
        for (int h_q = 0; h_q < x.c.q_heads; ++h_q)
          for (int i = 0; i < x.tq; ++i)
            if (!x.empty_row[RowIndex(x, b, i)] && x.query_valid[RowIndex(x, b, i)]) move(x.q, d.dq, b, h_q, i, rms_q);
        continue;
      }
      if (anchor[b] < 0) continue;
      for (int j = 0; j < x.tk; ++j) {
        const bool seen = x.is_visible(b, anchor[b], j);
        if (seen != (m != Moves::kHiddenKv)) continue;
        for (int kv = 0; kv < x.c.kv_heads; ++kv) {
          if (m != Moves::kSeenV) move(x.k, d.dk, b, kv, j, rms_k);
          if (m != Moves::kSeenK) move(x.v, d.dv, b, kv, j, rms_v);
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

// ⟨dO, out⟩ and Σ|dO|·bound_out over the elements with upstream gradient (a row with
// none may be NaN under the masked-row policy); nullopt where such an element is not finite.
struct Loss {
  double value = 0.0, noise = 0.0;
};
std::optional<Loss> LossAt(const TensorD& out, const TensorD& bound, const TensorD& dout) {
  Loss loss;
  for (size_t e = 0; e < dout.data.size(); ++e) {
    if (dout.data[e] == 0.0) continue;
    if (!std::isfinite(out.data[e])) return std::nullopt;
    loss.value += dout.data[e] * out.data[e];
    loss.noise += std::abs(dout.data[e]) * bound.data[e];
  }
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
  std::string_view closest = "none moves an element";
  double closest_ratio = std::numeric_limits<double>::infinity();
  for (Moves m : kDirections) {
    const Direction d = MakeDirection(x, m, anchor, c.seed);
    if (!d.moves) continue;
    // 2⟨g, Δ⟩ and the backward's rounding 2·Σ|Δ|·bound_g
    double predicted = 0.0, backward_noise = 0.0;
    for (auto [name, step] : {std::pair{"dq", &d.dq}, {"dk", &d.dk}, {"dv", &d.dv}}) {
      const TensorD& grad = g.tensor(name);
      const TensorD* bound = nullptr;
      for (size_t e = 0; e < step->data.size(); ++e) {
        if (step->data[e] == 0.0) continue;
        if (!std::isfinite(grad.data[e])) {
          Verdict v = Verdict::Fail(fmt::format("{} is {} at an element the direction ({}) moves: no derivative of a "
                                                "finite forward is",
                                                name, grad.data[e], Name(m)));
          return v.At("gradient vs the forward's finite difference", Role::kNumeric);
        }
        if (bound == nullptr) bound = &gradient_model.Bound(name);
        predicted += 2.0 * grad.data[e] * step->data[e];
        backward_noise += 2.0 * std::abs(step->data[e]) * bound->data[e];
      }
    }
    // L at ±Δ and ±2Δ through the adapter's forward
    Loss at[4];
    const double multiples[4] = {1.0, -1.0, 2.0, -2.0};
    for (int p = 0; p < 4; ++p) {
      const Scenario y = Shifted(x, d, multiples[p]);
      const std::optional<AdapterRun> run = law.Attend(y, fmt::format(" (forward at x {:+g}Δ)", multiples[p]));
      if (!run) return law.stop();
      Oracle forward_model(y, options);
      const std::optional<Loss> loss = LossAt(run->out, forward_model.Bound(), dout);
      if (!loss) return Verdict::Skip(fmt::format("the forward is not finite on a row with upstream gradient at x {:+g}Δ "
                                                  "(along {}): no finite difference",
                                                  multiples[p], Name(m)));
      at[p] = *loss;
    }
    const double d1 = at[0].value - at[1].value, d2 = at[2].value - at[3].value;
    const double e1 = at[0].noise + at[1].noise, e2 = at[2].noise + at[3].noise;
    const double cubic = std::abs(d2 - 2.0 * d1) / 12.0, cubic_noise = (e2 + 2.0 * e1) / 12.0;
    const double truncation = 4.0 * (cubic + cubic_noise);
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
    if (std::getenv("SC_DEBUG")) fmt::print(stderr, "{}: d1={:.6g} pred={:.6g} e1={:.3g} trunc={:.3g} bwd={:.3g}\n", Name(m), d1, predicted, e1, truncation, backward_noise);
    const double ratio = predicted == 0.0 ? std::numeric_limits<double>::infinity() : tolerance / std::abs(predicted);
    if (ratio <= kInformative) {
      ++informative;
    } else if (ratio < closest_ratio) {
      closest_ratio = ratio;
      closest = Name(m);
    }
  }
  if (informative == 0) {
    return Verdict::Skip(fmt::format("no direction is informative (the tolerance exceeds a quarter of 2⟨g, Δ⟩ along "
                                     "each; closest: {})",
                                     closest));
  }
  return Verdict::Pass();
}

}  // namespace attncheck
