// The oracle and the declared-accuracy model run their sums key-major
// (reference/key_major.h); these tests hold them bitwise to the one-key-at-a-time
// loops they replaced (kept below as written before), on random shapes, GQA,
// softcap, bias, empty rows, poisoned blocked keys and every declared accuracy.
#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "reference/attention.h"
#include "reference/data.h"
#include "reference/declared_attention.h"

namespace attncheck::reference {
namespace {

// The oracle's loops as they were: per key, per dim, in double.
TensorD LoopOracle(const TensorD& q, const TensorD& k, const TensorD& v, const std::vector<uint8_t>& visible,
                   const TensorD* bias, double scale, double softcap) {
  const int batch = q.shape[0], hq = q.shape[1], tq = q.shape[2], dim = q.shape[3];
  const int hkv = k.shape[1], tk = k.shape[2], dv = v.shape[3];
  TensorD out(batch, hq, tq, dv);
  for (int b = 0; b < batch; ++b)
    for (int h = 0; h < hq; ++h)
      for (int i = 0; i < tq; ++i) {
        const int kv = h / (hq / hkv);
        std::vector<int> keys;
        std::vector<double> scores;
        for (int j = 0; j < tk; ++j) {
          if (!visible[(static_cast<size_t>(b) * tq + i) * tk + j]) continue;
          double dot = 0.0;
          for (int d = 0; d < dim; ++d) dot = dot + q.at(b, h, i, d) * k.at(b, kv, j, d);
          double s = scale * dot;
          if (softcap > 0.0) s = softcap * std::tanh(s / softcap);
          if (bias != nullptr) s = s + bias->at(b, h, i, j);
          keys.push_back(j);
          scores.push_back(s);
        }
        if (keys.empty()) continue;
        double max_score = scores.front(), sum = 0.0;
        for (double s : scores) max_score = s > max_score ? s : max_score;
        std::vector<double> p;
        for (double s : scores) {
          p.push_back(std::exp(s - max_score));
          sum = sum + p.back();
        }
        for (double& x : p) x = x / sum;
        for (int d = 0; d < dv; ++d) {
          double acc = 0.0;
          for (size_t n = 0; n < keys.size(); ++n) acc = acc + p[n] * v.at(b, kv, keys[n], d);
          out.at(b, h, i, d) = acc;
        }
      }
  return out;
}

// The declared model's loops as they were: every operand rounded where it is used.
TensorD LoopDeclared(const TensorD& q, const TensorD& k, const TensorD& v, const std::vector<uint8_t>& visible,
                     const TensorD* bias, double scale, double softcap, Dtype input, const Accuracy& a) {
  const int batch = q.shape[0], hq = q.shape[1], tq = q.shape[2], dim = q.shape[3];
  const int hkv = k.shape[1], tk = k.shape[2], dv = v.shape[3];
  const auto in = [input](double x) { return RoundTo(input, x); };
  const Dtype f32 = Dtype::kF32;
  TensorD out(batch, hq, tq, dv);
  for (int b = 0; b < batch; ++b)
    for (int h = 0; h < hq; ++h)
      for (int i = 0; i < tq; ++i) {
        const int kv = h / (hq / hkv);
        std::vector<int> keys;
        std::vector<double> scores;
        for (int j = 0; j < tk; ++j) {
          if (!visible[(static_cast<size_t>(b) * tq + i) * tk + j]) continue;
          double dot = 0.0;
          for (int d = 0; d < dim; ++d)
            dot = RoundTo(a.score_accum, dot + RoundTo(a.score_accum, in(q.at(b, h, i, d)) * in(k.at(b, kv, j, d))));
          double s = RoundTo(a.score_accum, RoundTo(a.score_accum, scale) * dot);
          if (softcap > 0.0) s = RoundTo(a.score_accum, softcap * RoundTo(a.score_accum, std::tanh(s / softcap)));
          if (bias != nullptr) s = RoundTo(a.score_accum, s + in(bias->at(b, h, i, j)));
          if (a.scores_in_input_dtype) s = in(s);
          keys.push_back(j);
          scores.push_back(s);
        }
        if (keys.empty()) continue;
        double max_score = scores.front(), sum = 0.0;
        for (double s : scores) max_score = std::max(max_score, s);
        std::vector<double> p;
        for (double s : scores) {
          p.push_back(RoundTo(f32, std::exp(RoundTo(f32, s - max_score))));
          sum = RoundTo(f32, sum + p.back());
        }
        for (double& x : p) {
          x = RoundTo(f32, x / sum);
          if (a.p_in_input_dtype) x = in(x);
        }
        for (int d = 0; d < dv; ++d) {
          double acc = 0.0;
          for (size_t n = 0; n < keys.size(); ++n)
            acc = RoundTo(a.pv_accum, acc + RoundTo(a.pv_accum, p[n] * in(v.at(b, kv, keys[n], d))));
          out.at(b, h, i, d) = in(acc);
        }
      }
  return out;
}

bool SameBits(const TensorD& a, const TensorD& b) {
  if (a.shape != b.shape) return false;
  for (size_t e = 0; e < a.data.size(); ++e)
    if (!(a.data[e] == b.data[e] || (std::isnan(a.data[e]) && std::isnan(b.data[e])))) return false;
  return true;
}

struct Draw {
  TensorD q, k, v, bias;
  std::vector<uint8_t> visible;
  double scale = 1.0, softcap = 0.0;
  bool has_bias = false;
};

// Random shapes and data; blocked keys sometimes carry NaN, inf or huge values,
// some rows see no key; scores large enough to saturate the softmax now and then.
Draw RandomDraw(std::mt19937& rng) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  std::normal_distribution<double> normal(0.0, 1.0);
  const int batch = pick(1, 2), hkv = pick(1, 2), group = pick(1, 3), tq = pick(1, 9), tk = pick(1, 13);
  const int dim = pick(1, 19), dv = pick(1, 11);
  const double magnitude = std::ldexp(1.0, pick(-3, 4));
  Draw d;
  d.q = TensorD(batch, hkv * group, tq, dim);
  d.k = TensorD(batch, hkv, tk, dim);
  d.v = TensorD(batch, hkv, tk, dv);
  for (TensorD* t : {&d.q, &d.k, &d.v})
    for (double& x : t->data) x = magnitude * normal(rng);
  d.visible.resize(static_cast<size_t>(batch) * tq * tk);
  for (uint8_t& x : d.visible) x = pick(0, 3) != 0;
  for (int j = 0; j < tk; ++j)  // an empty row
    d.visible[static_cast<size_t>(tk) + j] = tq > 1 ? 0 : d.visible[static_cast<size_t>(tk) + j];
  const double poison[] = {std::nan(""), INFINITY, -INFINITY, 1e38};
  for (int b = 0; b < batch; ++b)
    for (int j = 0; j < tk; ++j) {
      bool blocked = true;
      for (int i = 0; i < tq; ++i) blocked = blocked && !d.visible[(static_cast<size_t>(b) * tq + i) * tk + j];
      if (blocked && pick(0, 1))
        for (int h = 0; h < hkv; ++h) d.k.at(b, h, j, 0) = d.v.at(b, h, j, dv - 1) = poison[pick(0, 3)];
    }
  d.scale = 1.0 / std::sqrt(static_cast<double>(dim));
  d.softcap = pick(0, 2) == 0 ? 5.0 : 0.0;
  d.has_bias = pick(0, 1) == 1;
  d.bias = TensorD(batch, hkv * group, tq, tk);
  for (double& x : d.bias.data) x = normal(rng);
  return d;
}

TEST(KeyMajorModels, OracleMatchesTheLoopsBitwise) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 400; ++trial) {
    const Draw d = RandomDraw(rng);
    const TensorD* bias = d.has_bias ? &d.bias : nullptr;
    const TensorD fast = AttentionCore<double>(d.q, d.k, d.v, d.visible, bias, d.scale, d.softcap).out;
    ASSERT_TRUE(SameBits(fast, LoopOracle(d.q, d.k, d.v, d.visible, bias, d.scale, d.softcap))) << "trial " << trial;
  }
}

TEST(KeyMajorModels, DeclaredModelMatchesTheLoopsBitwise) {
  std::mt19937 rng(12);
  const Dtype dtypes[] = {Dtype::kF32, Dtype::kF16, Dtype::kBf16};
  for (int trial = 0; trial < 600; ++trial) {
    const Draw d = RandomDraw(rng);
    const TensorD* bias = d.has_bias ? &d.bias : nullptr;
    Accuracy a;
    a.score_accum = dtypes[trial % 3];
    a.pv_accum = dtypes[(trial / 3) % 3];
    a.scores_in_input_dtype = (trial / 9) % 2 == 1;
    a.p_in_input_dtype = (trial / 18) % 2 == 1;
    const Dtype input = dtypes[(trial / 36) % 3];
    const TensorD fast = DeclaredAttention(d.q, d.k, d.v, d.visible, bias, d.scale, d.softcap, input, a);
    ASSERT_TRUE(SameBits(fast, LoopDeclared(d.q, d.k, d.v, d.visible, bias, d.scale, d.softcap, input, a)))
        << "trial " << trial << ": " << Describe(a) << ", input " << Name(input);
  }
}

}  // namespace
}  // namespace attncheck::reference
