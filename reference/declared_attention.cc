// The declared-accuracy naive model (declared_attention.h): one loop per formula
// of reference/attention.cc, each intermediate rounded with data.h's RoundTo to
// the dtype the declaration names for its stage.
#include "reference/declared_attention.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "reference/data.h"

namespace attncheck::reference {

TensorD DeclaredAttention(const TensorD& q, const TensorD& k, const TensorD& v, const std::vector<uint8_t>& visible,
                          const TensorD* bias, double scale, double softcap, Dtype input, const Accuracy& accuracy) {
  const int batch = q.shape[0], q_heads = q.shape[1], tq = q.shape[2], head_dim = q.shape[3];
  const int kv_heads = k.shape[1], tk = k.shape[2], value_dim = v.shape[3];
  const Dtype score = accuracy.score_accum, pv = accuracy.pv_accum, f32 = Dtype::kF32;
  const auto in = [input](double x) { return RoundTo(input, x); };
  TensorD out(batch, q_heads, tq, value_dim);  // [B, Hq, Tq, Dv]
  std::vector<int> keys;
  std::vector<double> scores, probabilities;
  for (int b = 0; b < batch; ++b) {
    for (int h = 0; h < q_heads; ++h) {
      const int kv_head = h / (q_heads / kv_heads);  // GQA: kv head = ⌊h / (Hq/Hkv)⌋
      for (int i = 0; i < tq; ++i) {
        keys.clear();
        scores.clear();
        for (int j = 0; j < tk; ++j) {
          if (visible[(static_cast<size_t>(b) * tq + i) * tk + j] == 0) continue;
          double dot = 0.0;  // S_j = scale · Σ_d q_d k_jd, accumulated in the declared dtype
          for (int d = 0; d < head_dim; ++d)
            dot = RoundTo(score, dot + RoundTo(score, in(q.at(b, h, i, d)) * in(k.at(b, kv_head, j, d))));
          double s = RoundTo(score, RoundTo(score, scale) * dot);
          if (softcap > 0.0) s = RoundTo(score, softcap * RoundTo(score, std::tanh(s / softcap)));
          if (bias != nullptr) s = RoundTo(score, s + in(bias->at(b, h, i, j)));
          if (accuracy.scores_in_input_dtype) s = in(s);
          keys.push_back(j);
          scores.push_back(s);
        }
        if (keys.empty()) continue;  // no visible key: 0 (the oracle's convention)
        // P_j = e^(S_j − max S) / Σ e^(S − max S), in f32
        const double max_score = *std::max_element(scores.begin(), scores.end());
        double sum = 0.0;
        probabilities.clear();
        for (double s : scores) {
          probabilities.push_back(RoundTo(f32, std::exp(RoundTo(f32, s - max_score))));
          sum = RoundTo(f32, sum + probabilities.back());
        }
        for (double& p : probabilities) {
          p = RoundTo(f32, p / sum);
          if (accuracy.p_in_input_dtype) p = in(p);
        }
        // out_d = Σ_j P_j v_jd, accumulated in the declared dtype, stored in the input dtype
        for (int d = 0; d < value_dim; ++d) {
          double acc = 0.0;
          for (size_t n = 0; n < keys.size(); ++n)
            acc = RoundTo(pv, acc + RoundTo(pv, probabilities[n] * in(v.at(b, kv_head, keys[n], d))));
          out.at(b, h, i, d) = in(acc);
        }
      }
    }
  }
  return out;
}

}  // namespace attncheck::reference
