// The declared-accuracy naive model (declared_attention.h): one loop per formula
// of reference/attention.cc, each intermediate rounded with data.h's RoundTo to
// the dtype the declaration names for its stage.
#include "reference/declared_attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "reference/data.h"
#include "reference/key_major.h"

namespace attncheck::reference {

namespace {

// dots[j] = R_s(dot_j + R_s(q_d·k_jd)) over d = 0, 1, … for every key j of the
// head, from q and keys_t [D, Tk] already rounded to the input dtype. In f32 the
// float operations are those roundings (a sum or product of floats rounded to
// double, then to float, is the float operation: 53 ≥ 2·24 + 2), so Eigen's
// packets run them (key_major.h); other accumulations round each step in double.
// q_f, keys_f: the same as floats; dots_f: storage.
void DeclaredDots(const std::vector<double>& q, const std::vector<double>& keys_t, const std::vector<float>& q_f,
                  const std::vector<float>& keys_f, int head_dim, int tk, int count, Dtype score,
                  std::vector<float>& dots_f, std::vector<double>& dots) {
  dots.assign(static_cast<size_t>(tk), 0.0);
  if (score == Dtype::kF32) {
    dots_f.resize(static_cast<size_t>(tk));
    KeyDots<float>(q_f.data(), keys_f, head_dim, tk, count, dots_f.data());
    std::copy(dots_f.begin(), dots_f.begin() + count, dots.begin());
    return;
  }
  for (int d = 0; d < head_dim; ++d) {
    const double* k_row = keys_t.data() + static_cast<size_t>(d) * tk;
    for (int j = 0; j < count; ++j) dots[static_cast<size_t>(j)] = RoundTo(score, dots[static_cast<size_t>(j)] + RoundTo(score, q[static_cast<size_t>(d)] * k_row[j]));
  }
}

// S_j of the declared model from its dot: the scale, softcap and the handed bias
// (nullptr: none), each rounded to the score dtype, then to the input dtype where
// the scores are stored in it.
double DeclaredScore(double dot, double scale, double softcap, const double* bias, Dtype input,
                     const Accuracy& accuracy) {
  const Dtype score = accuracy.score_accum;
  double s = RoundTo(score, RoundTo(score, scale) * dot);
  if (softcap > 0.0) s = RoundTo(score, softcap * RoundTo(score, std::tanh(s / softcap)));
  if (bias != nullptr) s = RoundTo(score, s + HandedBias(input, *bias));
  return accuracy.scores_in_input_dtype ? RoundTo(input, s) : s;
}

}  // namespace

std::optional<ScoreOverflow> FirstScoreOverflow(const TensorD& q, const TensorD& k, const std::vector<uint8_t>& visible,
                                                const TensorD* bias, double scale, double softcap, Dtype input,
                                                const Accuracy& accuracy) {
  if (!ScoresMayOverflow(accuracy, input)) return {};
  const int batch = q.shape[0], q_heads = q.shape[1], tq = q.shape[2], head_dim = q.shape[3];
  const int kv_heads = k.shape[1], tk = k.shape[2];
  const auto in = [input](double x) { return RoundTo(input, x); };
  std::vector<double> keys_t, q_row, dots;
  std::vector<float> keys_f, q_f, dots_f;
  for (int b = 0; b < batch; ++b) {
    for (int h = 0; h < q_heads; ++h) {
      if (h % (q_heads / kv_heads) == 0) {  // the first query head of its kv head, as DeclaredAttention
        const int kv_head = h / (q_heads / kv_heads);
        TransposeKeys<double>(k.data.data() + (static_cast<size_t>(b) * kv_heads + kv_head) * tk * head_dim, tk,
                              head_dim, in, keys_t);
        keys_f.assign(keys_t.begin(), keys_t.end());
      }
      for (int i = 0; i < tq; ++i) {
        const uint8_t* visible_row = visible.data() + (static_cast<size_t>(b) * tq + i) * tk;
        const int extent = VisibleExtent(visible_row, tk);
        if (extent == 0) continue;
        const double* q_at = q.data.data() + ((static_cast<size_t>(b) * q_heads + h) * tq + i) * head_dim;
        q_row.resize(static_cast<size_t>(head_dim));
        std::transform(q_at, q_at + head_dim, q_row.begin(), in);
        q_f.assign(q_row.begin(), q_row.end());
        DeclaredDots(q_row, keys_t, q_f, keys_f, head_dim, tk, extent, accuracy.score_accum, dots_f, dots);
        for (int j = 0; j < extent; ++j) {
          if (visible_row[j] == 0) continue;
          const double* bias_j = bias != nullptr ? &bias->at(b, h, i, j) : nullptr;
          if (std::isfinite(DeclaredScore(dots[static_cast<size_t>(j)], scale, softcap, bias_j, input, accuracy)))
            continue;
          double exact = 0.0;  // the score in double from the same handed inputs
          for (int d = 0; d < head_dim; ++d)
            exact += q_row[static_cast<size_t>(d)] * keys_t[static_cast<size_t>(d) * tk + j];
          exact *= scale;
          if (softcap > 0.0) exact = softcap * std::tanh(exact / softcap);
          if (bias_j != nullptr) exact += *bias_j;
          return ScoreOverflow{b, h, i, j, exact};
        }
      }
    }
  }
  return {};
}

TensorD DeclaredAttention(const TensorD& q, const TensorD& k, const TensorD& v, const std::vector<uint8_t>& visible,
                          const TensorD* bias, double scale, double softcap, Dtype input, const Accuracy& accuracy) {
  const int batch = q.shape[0], q_heads = q.shape[1], tq = q.shape[2], head_dim = q.shape[3];
  const int kv_heads = k.shape[1], tk = k.shape[2], value_dim = v.shape[3];
  const Dtype score = accuracy.score_accum, pv = accuracy.pv_accum, f32 = Dtype::kF32;
  const auto in = [input](double x) { return RoundTo(input, x); };
  TensorD out(batch, q_heads, tq, value_dim);  // [B, Hq, Tq, Dv]
  std::vector<int> keys;
  std::vector<double> scores, probabilities;
  // One (b, kv head)'s keys transposed [D, Tk] and values [Tk, Dv], rounded to the
  // input dtype once (in double, and as floats: every input dtype is a float);
  // one query row [D] the same; its dots [Tk]; an output row [Dv].
  std::vector<double> keys_t, values, q_row, dots, acc;
  std::vector<float> keys_f, values_f, q_f, dots_f, acc_f;
  for (int b = 0; b < batch; ++b) {
    for (int h = 0; h < q_heads; ++h) {
      const int kv_head = h / (q_heads / kv_heads);  // GQA: kv head = ⌊h / (Hq/Hkv)⌋
      if (h % (q_heads / kv_heads) == 0) {  // the first query head of its kv head
        const size_t kv_block = static_cast<size_t>(b) * kv_heads + kv_head;
        TransposeKeys<double>(k.data.data() + kv_block * tk * head_dim, tk, head_dim, in, keys_t);
        keys_f.assign(keys_t.begin(), keys_t.end());
        values.resize(static_cast<size_t>(tk) * value_dim);
        std::transform(v.data.begin() + static_cast<std::ptrdiff_t>(kv_block * values.size()),
                       v.data.begin() + static_cast<std::ptrdiff_t>((kv_block + 1) * values.size()), values.begin(), in);
        values_f.assign(values.begin(), values.end());
      }
      for (int i = 0; i < tq; ++i) {
        const uint8_t* visible_row = visible.data() + (static_cast<size_t>(b) * tq + i) * tk;
        const int extent = VisibleExtent(visible_row, tk);  // the dots of visible keys only
        if (extent == 0) continue;  // no visible key: 0 (the oracle's convention)
        const double* q_at = q.data.data() + ((static_cast<size_t>(b) * q_heads + h) * tq + i) * head_dim;
        q_row.resize(static_cast<size_t>(head_dim));
        std::transform(q_at, q_at + head_dim, q_row.begin(), in);
        q_f.assign(q_row.begin(), q_row.end());
        // S_j = scale · Σ_d q_d k_jd, accumulated in the declared dtype
        DeclaredDots(q_row, keys_t, q_f, keys_f, head_dim, tk, extent, score, dots_f, dots);
        keys.clear();
        scores.clear();
        for (int j = 0; j < extent; ++j) {
          if (visible_row[j] == 0) continue;
          keys.push_back(j);
          scores.push_back(DeclaredScore(dots[static_cast<size_t>(j)], scale, softcap,
                                         bias != nullptr ? &bias->at(b, h, i, j) : nullptr, input, accuracy));
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
        // out_d = Σ_j P_j v_jd, accumulated in the declared dtype (R_pv after each
        // product and sum; f32 as float operations, as the dots), stored in the input dtype
        if (pv == f32) {
          acc_f.assign(static_cast<size_t>(value_dim), 0.0f);
          for (size_t n = 0; n < keys.size(); ++n)
            AddWeighted<float>(static_cast<float>(probabilities[n]),
                               values_f.data() + static_cast<size_t>(keys[n]) * value_dim, value_dim, acc_f.data());
          for (int d = 0; d < value_dim; ++d) out.at(b, h, i, d) = in(acc_f[static_cast<size_t>(d)]);
          continue;
        }
        acc.assign(static_cast<size_t>(value_dim), 0.0);
        for (size_t n = 0; n < keys.size(); ++n) {
          const double* value = values.data() + static_cast<size_t>(keys[n]) * value_dim;
          for (int d = 0; d < value_dim; ++d)
            acc[static_cast<size_t>(d)] = RoundTo(pv, acc[static_cast<size_t>(d)] + RoundTo(pv, probabilities[n] * value[d]));
        }
        for (int d = 0; d < value_dim; ++d) out.at(b, h, i, d) = in(acc[static_cast<size_t>(d)]);
      }
    }
  }
  return out;
}

}  // namespace attncheck::reference
