// The attention backward of reference/backward.h, row by row in double, rounding
// where a same-dtype model asks.
#include "reference/backward.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include "reference/attention.h"
#include "reference/data.h"
#include "reference/declared_attention.h"
#include "reference/positional.h"

namespace attncheck::reference {
namespace {

// Rounds x as the model stores or accumulates it (the oracle: unchanged).
struct Rounder {
  const std::optional<BackwardRounding>& r;
  double Store(double x) const { return r ? RoundTo(r->storage, x) : x; }
  double Intermediate(double x) const {
    return r ? RoundTo(r->intermediates_stored ? r->storage : r->accumulation, x) : x;
  }
  double Sum(double x) const { return r ? RoundTo(r->accumulation, x) : x; }
};

uint64_t Mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

double Unit(uint64_t bits) { return static_cast<double>(bits >> 11) * 0x1.0p-53 * 2.0 - 1.0; }  // [−1, 1)

}  // namespace

BackwardResult BackwardCore(const TensorD& q, const TensorD& k, const TensorD& v, const std::vector<uint8_t>& visible,
                            const TensorD* bias, double scale, double softcap, const TensorD& dout,
                            const std::optional<BackwardRounding>& rounding, bool absolute, bool unit_derivative,
                            bool unit_probability) {
  const int batch = q.shape[0], q_heads = q.shape[1], tq = q.shape[2], head_dim = q.shape[3];
  const int kv_heads = k.shape[1], tk = k.shape[2], value_dim = v.shape[3];
  const int group = q_heads / kv_heads;
  const Rounder round{rounding};
  const auto term = [absolute](double x) { return absolute ? std::abs(x) : x; };
  BackwardResult r{TensorD(batch, q_heads, tq, head_dim), TensorD(batch, kv_heads, tk, head_dim),
                   TensorD(batch, kv_heads, tk, value_dim), TensorD(batch, q_heads, tq, 1)};
  std::vector<int> keys;
  std::vector<double> z, p, dz, o(static_cast<size_t>(value_dim));
  for (int b = 0; b < batch; ++b)
    for (int h = 0; h < q_heads; ++h) {
      const int kv = h / group;
      for (int i = 0; i < tq; ++i) {
        const uint8_t* visible_row = visible.data() + (static_cast<size_t>(b) * tq + i) * tk;
        keys.clear();
        z.clear();
        p.clear();
        double max_score = -INFINITY;
        for (int j = 0; j < tk; ++j) {
          if (!visible_row[j]) continue;
          double dot = 0.0;
          for (int d = 0; d < head_dim; ++d) dot = round.Sum(dot + q.at(b, h, i, d) * k.at(b, kv, j, d));
          const double zj = scale * dot;
          double s = softcap > 0.0 ? softcap * std::tanh(zj / softcap) : zj;
          if (bias != nullptr) s += bias->at(b, h, i, j);
          if (rounding && rounding->scores_stored) s = RoundTo(rounding->storage, s);
          keys.push_back(j);
          z.push_back(zj);
          p.push_back(s);
          max_score = std::max(max_score, s);
        }
        if (keys.empty()) {  // no visible key: no gradient
          r.lse.at(b, h, i, 0) = -INFINITY;
          continue;
        }
        double sum = 0.0, exact_sum = 0.0;
        for (double& s : p) {
          s = std::exp(s - max_score);
          sum = round.Sum(sum + s);
          exact_sum += s;
        }
        r.lse.at(b, h, i, 0) = max_score + std::log(exact_sum);
        for (double& pj : p) pj = absolute && unit_probability ? 1.0 : round.Intermediate(pj / sum);
        std::fill(o.begin(), o.end(), 0.0);
        for (size_t n = 0; n < keys.size(); ++n)
          for (int d = 0; d < value_dim; ++d) o[d] = round.Sum(o[d] + term(p[n]) * term(v.at(b, kv, keys[n], d)));
        double delta = 0.0;  // δ_i = dO_i·O_i
        for (int d = 0; d < value_dim; ++d) delta = round.Sum(delta + term(dout.at(b, h, i, d)) * term(round.Store(o[d])));
        dz.assign(keys.size(), 0.0);
        for (size_t n = 0; n < keys.size(); ++n) {
          const int j = keys[n];
          double dp = 0.0;
          for (int d = 0; d < value_dim; ++d) dp = round.Sum(dp + term(dout.at(b, h, i, d)) * term(v.at(b, kv, j, d)));
          dp = round.Intermediate(dp);
          double ds = absolute ? p[n] * (dp + delta) : round.Intermediate(p[n] * (dp - delta));
          if (softcap > 0.0 && !(absolute && unit_derivative)) {
            const double t = std::tanh(z[n] / softcap);
            ds = round.Intermediate(ds * (1.0 - t * t));
          }
          dz[n] = ds;
          for (int d = 0; d < value_dim; ++d) {
            double& dv = r.dv.at(b, kv, j, d);
            dv = round.Sum(dv + p[n] * term(dout.at(b, h, i, d)));
          }
        }
        for (int d = 0; d < head_dim; ++d) {
          double dq = 0.0;
          for (size_t n = 0; n < keys.size(); ++n) dq = round.Sum(dq + dz[n] * term(k.at(b, kv, keys[n], d)));
          r.dq.at(b, h, i, d) = round.Store(scale * dq);
        }
        for (size_t n = 0; n < keys.size(); ++n)
          for (int d = 0; d < head_dim; ++d) {
            double& dk = r.dk.at(b, kv, keys[n], d);
            dk = round.Sum(dk + scale * dz[n] * term(q.at(b, h, i, d)));
          }
      }
    }
  for (TensorD* t : {&r.dk, &r.dv})
    for (double& x : t->data) x = round.Store(x);
  return r;
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
  const uint64_t base = Mix(seed ^ (0xD0Full << 40) ^ static_cast<uint64_t>(profile));
  for (int b = 0; b < s.batch; ++b)
    for (int h = 0; h < hq; ++h) {
      const int chosen = s.tq > 0 ? static_cast<int>(Mix(base + 31u * b + h) % static_cast<uint64_t>(s.tq)) : 0;
      for (int i = 0; i < s.tq; ++i) {
        if (!pad_rows && !s.query_valid[static_cast<size_t>(b) * s.tq + i]) continue;
        const uint64_t row = Mix(base ^ Mix((static_cast<uint64_t>(b) * hq + h) * 65537u + i));
        if (profile == UpstreamProfile::kSparse && row % 4 != 0) continue;
        if (profile == UpstreamProfile::kOneRow && i != chosen) continue;
        const double amplitude = profile == UpstreamProfile::kLarge ? 64.0 : 1.0;
        for (int d = 0; d < dv; ++d) dout.at(b, h, i, d) = RoundTo(s.c.dtype, amplitude * Unit(Mix(row + d)));
      }
    }
  return dout;
}

}  // namespace attncheck::reference
