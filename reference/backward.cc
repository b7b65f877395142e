// The attention backward of reference/backward.h, row by row in double, rounding
// where a same-dtype model asks.
#include "reference/backward.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include "cases/random_source.h"
#include "reference/attention.h"
#include "reference/data.h"
#include "reference/declared_attention.h"
#include "reference/positional.h"

namespace attncheck::reference {
namespace {

// Rounds x as the model stores or accumulates it; without rounding (the oracle and
// the magnitude passes) every step is the identity.
template <bool kRounded>
struct Rounder {
  Dtype storage = Dtype::kF32, intermediate = Dtype::kF32, accumulation = Dtype::kF32;
  bool scores_stored = false;  // S rounded to storage once biased
  double Store(double x) const { return kRounded ? RoundTo(storage, x) : x; }
  double Intermediate(double x) const { return kRounded ? RoundTo(intermediate, x) : x; }
  double Sum(double x) const { return kRounded ? RoundTo(accumulation, x) : x; }
  double Score(double x) const { return kRounded && scores_stored ? RoundTo(storage, x) : x; }
};

double Unit(uint64_t bits) { return static_cast<double>(bits >> 11) * 0x1.0p-53 * 2.0 - 1.0; }  // [−1, 1)

// Σ_d round(acc + a[d]·b_n[d]) for four rows b_n at once: four independent chains,
// each summed in the order d = 0, 1, … as one at a time would (the same bits; the
// interleaving only hides the latency of each chain's additions).
template <bool kRounded>
void Dot4(const Rounder<kRounded>& round, const double* a, const double* const b[4], int length, double out[4]) {
  double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
  for (int d = 0; d < length; ++d) {
    s0 = round.Sum(s0 + a[d] * b[0][d]);
    s1 = round.Sum(s1 + a[d] * b[1][d]);
    s2 = round.Sum(s2 + a[d] * b[2][d]);
    s3 = round.Sum(s3 + a[d] * b[3][d]);
  }
  out[0] = s0, out[1] = s1, out[2] = s2, out[3] = s3;
}

template <bool kRounded>
double Dot(const Rounder<kRounded>& round, const double* a, const double* b, int length) {
  double s = 0.0;
  for (int d = 0; d < length; ++d) s = round.Sum(s + a[d] * b[d]);
  return s;
}

// dots[n] = Σ_d a[d]·rows(keys[n])[d], each in its own order (Dot4 / Dot).
template <bool kRounded, class Row>
void Dots(const Rounder<kRounded>& round, const double* a, const std::vector<int>& keys, Row row, int length,
          std::vector<double>& dots) {
  dots.resize(keys.size());
  size_t n = 0;
  for (; n + 4 <= keys.size(); n += 4) {
    const double* const b[4] = {row(keys[n]), row(keys[n + 1]), row(keys[n + 2]), row(keys[n + 3])};
    Dot4(round, a, b, length, &dots[n]);
  }
  for (; n < keys.size(); ++n) dots[n] = Dot(round, a, row(keys[n]), length);
}

// The formulas of backward.h over every row. kAbsolute: every term by its magnitude.
template <bool kRounded, bool kAbsolute>
BackwardResult BackwardRows(const TensorD& q, const TensorD& k, const TensorD& v, const std::vector<uint8_t>& visible,
                            const TensorD* bias, double scale, double softcap, const TensorD& dout,
                            const Rounder<kRounded>& round,
                            bool unit_derivative, bool unit_probability) {
  const int batch = q.shape[0], q_heads = q.shape[1], tq = q.shape[2], head_dim = q.shape[3];
  const int kv_heads = k.shape[1], tk = k.shape[2], value_dim = v.shape[3];
  const int group = q_heads / kv_heads;
  const auto term = [](double x) { return kAbsolute ? std::abs(x) : x; };
  BackwardResult r{TensorD(batch, q_heads, tq, head_dim), TensorD(batch, kv_heads, tk, head_dim),
                   TensorD(batch, kv_heads, tk, value_dim), TensorD(batch, q_heads, tq, 1)};
  std::vector<int> keys;
  std::vector<double> dots, z, p, dp, dz, o(static_cast<size_t>(value_dim)), dq(static_cast<size_t>(head_dim));
  std::vector<double> dout_term(static_cast<size_t>(value_dim)), q_term(static_cast<size_t>(head_dim));
  std::vector<double> v_term(kAbsolute ? v.data.size() : 0), k_term(kAbsolute ? k.data.size() : 0);
  for (size_t e = 0; e < v_term.size(); ++e) v_term[e] = term(v.data[e]);
  for (size_t e = 0; e < k_term.size(); ++e) k_term[e] = term(k.data[e]);
  const double* v_terms = kAbsolute ? v_term.data() : v.data.data();
  const double* k_terms = kAbsolute ? k_term.data() : k.data.data();
  for (int b = 0; b < batch; ++b)
    for (int h = 0; h < q_heads; ++h) {
      const int kv = h / group;
      const size_t kv_base = (static_cast<size_t>(b) * kv_heads + kv) * tk;
      const auto k_row = [&](int j) { return k.data.data() + (kv_base + j) * head_dim; };
      const auto k_term_row = [&](int j) { return k_terms + (kv_base + j) * head_dim; };
      const auto v_term_row = [&](int j) { return v_terms + (kv_base + j) * value_dim; };
      double* const dk_base = r.dk.data.data() + kv_base * head_dim;
      double* const dv_base = r.dv.data.data() + kv_base * value_dim;
      for (int i = 0; i < tq; ++i) {
        const uint8_t* visible_row = visible.data() + (static_cast<size_t>(b) * tq + i) * tk;
        const size_t row = (static_cast<size_t>(b) * q_heads + h) * tq + i;
        const double* q_row = q.data.data() + row * head_dim;
        const double* dout_row = dout.data.data() + row * value_dim;
        keys.clear();
        for (int j = 0; j < tk; ++j)
          if (visible_row[j]) keys.push_back(j);
        if (keys.empty()) {  // no visible key: no gradient
          r.lse.data[row] = -INFINITY;
          continue;
        }
        Dots(round, q_row, keys, k_row, head_dim, dots);
        z.resize(keys.size());
        p.resize(keys.size());
        double max_score = -INFINITY;
        for (size_t n = 0; n < keys.size(); ++n) {
          const double zj = scale * dots[n];
          double s = softcap > 0.0 ? softcap * std::tanh(zj / softcap) : zj;
          if (bias != nullptr) s += bias->at(b, h, i, keys[n]);
          s = round.Score(s);
          z[n] = zj;
          p[n] = s;
          max_score = std::max(max_score, s);
        }
        double sum = 0.0, exact_sum = 0.0;
        for (double& s : p) {
          s = std::exp(s - max_score);
          sum = round.Sum(sum + s);
          exact_sum += s;
        }
        r.lse.data[row] = max_score + std::log(exact_sum);
        for (double& pj : p) pj = kAbsolute && unit_probability ? 1.0 : round.Intermediate(pj / sum);
        std::fill(o.begin(), o.end(), 0.0);
        for (size_t n = 0; n < keys.size(); ++n) {
          const double pn = term(p[n]);
          const double* vr = v_term_row(keys[n]);
          for (int d = 0; d < value_dim; ++d) o[d] = round.Sum(o[d] + pn * vr[d]);
        }
        for (int d = 0; d < value_dim; ++d) dout_term[d] = term(dout_row[d]);
        double delta = 0.0;  // δ_i = dO_i·O_i
        for (int d = 0; d < value_dim; ++d) delta = round.Sum(delta + dout_term[d] * term(round.Store(o[d])));
        Dots(round, dout_term.data(), keys, v_term_row, value_dim, dp);
        dz.resize(keys.size());
        for (size_t n = 0; n < keys.size(); ++n) {
          const double dpn = round.Intermediate(dp[n]);
          double ds = kAbsolute ? p[n] * (dpn + delta) : round.Intermediate(p[n] * (dpn - delta));
          if (softcap > 0.0 && !(kAbsolute && unit_derivative)) {
            const double t = std::tanh(z[n] / softcap);
            ds = round.Intermediate(ds * (1.0 - t * t));
          }
          dz[n] = ds;
          double* dv = dv_base + static_cast<size_t>(keys[n]) * value_dim;
          for (int d = 0; d < value_dim; ++d) dv[d] = round.Sum(dv[d] + p[n] * dout_term[d]);
        }
        std::fill(dq.begin(), dq.end(), 0.0);  // each dq[d] summed over the keys in order
        for (size_t n = 0; n < keys.size(); ++n) {
          const double* kr = k_term_row(keys[n]);
          for (int d = 0; d < head_dim; ++d) dq[d] = round.Sum(dq[d] + dz[n] * kr[d]);
        }
        double* dq_row = r.dq.data.data() + row * head_dim;
        for (int d = 0; d < head_dim; ++d) dq_row[d] = round.Store(scale * dq[d]);
        for (int d = 0; d < head_dim; ++d) q_term[d] = term(q_row[d]);
        for (size_t n = 0; n < keys.size(); ++n) {
          double* dk = dk_base + static_cast<size_t>(keys[n]) * head_dim;
          const double step = scale * dz[n];
          for (int d = 0; d < head_dim; ++d) dk[d] = round.Sum(dk[d] + step * q_term[d]);
        }
      }
    }
  for (TensorD* t : {&r.dk, &r.dv})
    for (double& x : t->data) x = round.Store(x);
  return r;
}

}  // namespace

BackwardResult BackwardCore(const TensorD& q, const TensorD& k, const TensorD& v, const std::vector<uint8_t>& visible,
                            const TensorD* bias, double scale, double softcap, const TensorD& dout,
                            const std::optional<BackwardRounding>& rounding, bool absolute, bool unit_derivative,
                            bool unit_probability) {
  if (rounding) {
    const Rounder<true> round{rounding->storage,
                              rounding->intermediates_stored ? rounding->storage : rounding->accumulation,
                              rounding->accumulation, rounding->scores_stored};
    if (absolute)
      return BackwardRows<true, true>(q, k, v, visible, bias, scale, softcap, dout, round, unit_derivative,
                                      unit_probability);
    return BackwardRows<true, false>(q, k, v, visible, bias, scale, softcap, dout, round, unit_derivative,
                                     unit_probability);
  }
  const Rounder<false> exact;
  if (absolute)
    return BackwardRows<false, true>(q, k, v, visible, bias, scale, softcap, dout, exact, unit_derivative,
                                     unit_probability);
  return BackwardRows<false, false>(q, k, v, visible, bias, scale, softcap, dout, exact, unit_derivative,
                                    unit_probability);
}

BackwardResult Backward(const Scenario& s, const TensorD& dout, const std::optional<BackwardRounding>& rounding,
                        bool absolute, bool unit_derivative, bool unit_probability) {
  TensorD q, k;
  EncodeQk(s, q, k);
  std::shared_ptr<const TensorD> bias = HasScoreBias(s.c) ? SharedBiasTensor(s) : nullptr;
  if (!rounding) return BackwardCore(q, k, s.v, s.visible, bias.get(), s.c.effective_scale(), s.c.softcap, dout,
                                     std::nullopt, absolute, unit_derivative, unit_probability);
  if (bias) {
    auto rounded = std::make_shared<TensorD>(*bias);
    for (double& x : rounded->data) x = HandedBias(rounding->storage, x);
    bias = std::move(rounded);
  }
  // The model's inputs are what a kernel of that dtype holds.
  for (TensorD* t : {&q, &k})
    for (double& x : t->data) x = RoundTo(rounding->storage, x);
  TensorD v = s.v;
  for (double& x : v.data) x = RoundTo(rounding->storage, x);
  return BackwardCore(q, k, v, s.visible, bias.get(), s.c.effective_scale(), s.c.softcap, dout, rounding, absolute,
                      unit_derivative, unit_probability);
}

BackwardRounding DeclaredBackwardRounding(Dtype dtype, const Accuracy& accuracy) {
  return {dtype, accuracy.pv_accum, accuracy.p_in_input_dtype, accuracy.scores_in_input_dtype};
}

TensorD UpstreamGradient(const Scenario& s, uint64_t seed, UpstreamProfile profile, bool pad_rows) {
  const int hq = s.c.q_heads, dv = s.c.value_dim;
  TensorD dout(s.batch, hq, s.tq, dv);
  const uint64_t base = SplitMix64(seed ^ (0xD0Full << 40) ^ static_cast<uint64_t>(profile));
  for (int b = 0; b < s.batch; ++b)
    for (int h = 0; h < hq; ++h) {
      const int chosen = s.tq > 0 ? static_cast<int>(SplitMix64(base + 31u * b + h) % static_cast<uint64_t>(s.tq)) : 0;
      for (int i = 0; i < s.tq; ++i) {
        if (!pad_rows && !s.query_valid[static_cast<size_t>(b) * s.tq + i]) continue;
        const uint64_t row = SplitMix64(base ^ SplitMix64((static_cast<uint64_t>(b) * hq + h) * 65537u + i));
        if (profile == UpstreamProfile::kSparse && row % 4 != 0) continue;
        if (profile == UpstreamProfile::kOneRow && i != chosen) continue;
        const double amplitude = profile == UpstreamProfile::kLarge ? 64.0 : 1.0;
        for (int d = 0; d < dv; ++d) dout.at(b, h, i, d) = RoundTo(s.c.dtype, amplitude * Unit(SplitMix64(row + d)));
      }
    }
  return dout;
}

}  // namespace attncheck::reference
