// Naive scaled-dot-product attention (Vaswani et al. 2017, eq. 1) with softcap
// (Gemma 2: c·tanh(S/c)), additive score bias and GQA (Ainslie et al. 2023), as
// loops in T rounding after every operation; T = double is the oracle.
#include "reference/attention.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <type_traits>
#include <utility>

#include <Eigen/Core>

#include "reference/data.h"
#include "reference/key_major.h"
#include "reference/positional.h"

namespace attncheck::reference {
namespace {

template <class T>
double ToDouble(T x) {
  if constexpr (std::is_same_v<T, Eigen::half> || std::is_same_v<T, Eigen::bfloat16>) {
    return static_cast<double>(static_cast<float>(x));
  } else {
    return static_cast<double>(x);
  }
}

// S_j from its dot product, in T: S_j = scale · dot;  softcap: S_j = c · tanh(S_j / c);
// S_j += bias_j.  bias [B,Hq,Tq,Tk] or nullptr.
template <class T>
T ScoreFromDot(T dot, T scale_t, T softcap_t, bool softcap, const TensorD* bias, int b, int h, int i, int j) {
  using std::tanh;
  T score = T(scale_t * dot);
  if (softcap) score = T(softcap_t * T(tanh(T(score / softcap_t))));
  if (bias != nullptr) score = T(score + FromDouble<T>(bias->at(b, h, i, j)));
  return score;
}

// Scores of one query row over its visible keys, in T:
//   S_j = scale · Σ_d q_d k_jd;  softcap: S_j = c · tanh(S_j / c);  S_j += bias_j.
// q [B,Hq,Tq,D], k [B,Hkv,Tk,D], visible [B,Tq,Tk], bias [B,Hq,Tq,Tk] or nullptr.
template <class T>
void ScoreRow(const TensorD& q, const TensorD& k, const std::vector<uint8_t>& visible, const TensorD* bias,
              double scale, double softcap, int b, int h, int i, std::vector<int>& keys,
              std::vector<T>& scores) {
  const int q_heads = q.shape[1], tq = q.shape[2], head_dim = q.shape[3];
  const int kv_heads = k.shape[1], tk = k.shape[2];
  const int kv_head = h / (q_heads / kv_heads);  // GQA: kv head = ⌊h / (Hq/Hkv)⌋
  const T scale_t = FromDouble<T>(scale);
  const T softcap_t = FromDouble<T>(softcap);
  keys.clear();
  scores.clear();
  const double* q_row = head_dim > 0 ? &q.at(b, h, i, 0) : nullptr;
  for (int j = 0; j < tk; ++j) {
    if (visible[(static_cast<size_t>(b) * tq + i) * tk + j] == 0) continue;  // excluded, not −inf arithmetic
    T dot = T(0);
    const double* k_row = head_dim > 0 ? &k.at(b, kv_head, j, 0) : nullptr;
    for (int d = 0; d < head_dim; ++d) {
      const T product = T(FromDouble<T>(q_row[d]) * FromDouble<T>(k_row[d]));
      dot = T(dot + product);
    }
    keys.push_back(j);
    scores.push_back(ScoreFromDot<T>(dot, scale_t, softcap_t, softcap > 0.0, bias, b, h, i, j));
  }
}

// Softmax over the visible scores in T: P_j = exp(S_j − max S) / Σ exp(S − max S);
// returns lse = max S + log Σ exp(S − max S) (−inf for an empty row).
template <class T>
double SoftmaxRow(const std::vector<T>& scores, std::vector<T>& probabilities) {
  using std::exp;
  using std::log;
  probabilities.clear();
  if (scores.empty()) return -std::numeric_limits<double>::infinity();
  T max_score = scores.front();
  for (const T& score : scores) max_score = score > max_score ? score : max_score;
  T sum = T(0);
  for (const T& score : scores) {
    const T e = T(exp(T(score - max_score)));
    probabilities.push_back(e);
    sum = T(sum + e);
  }
  for (T& p : probabilities) p = T(p / sum);
  return ToDouble(T(max_score + T(log(sum))));
}

}  // namespace

// The loops of AttentionCore, one formula at a time. Rounding to T is exact
// arithmetic in double and float, so there the dot products and P·V run key-major
// (key_major.h): the same operations in the same order per element.
template <class T>
constexpr bool kKeyMajor = std::is_same_v<T, double> || std::is_same_v<T, float>;

template <class T>
AttentionResult AttentionCore(const TensorD& q, const TensorD& k, const TensorD& v,
                              const std::vector<uint8_t>& visible, const TensorD* bias, double scale,
                              double softcap) {
  const int batch = q.shape[0], q_heads = q.shape[1], tq = q.shape[2], head_dim = q.shape[3];
  const int kv_heads = k.shape[1], tk = k.shape[2], value_dim = v.shape[3];
  AttentionResult result;
  result.out = TensorD(batch, q_heads, tq, value_dim);  // [B, Hq, Tq, Dv]
  result.lse.assign(static_cast<size_t>(batch) * q_heads * tq, 0.0);  // [B, Hq, Tq]
  result.empty_row.assign(static_cast<size_t>(batch) * tq, 0);        // [B, Tq]
  std::vector<int> keys;
  std::vector<T> scores, probabilities;
  std::vector<const double*> v_rows;
  // Key-major working storage: one (b, kv head)'s keys transposed [D, Tk] and
  // values [Tk, Dv] in T, one query row [D], its dots [Tk] and output row [Dv].
  std::vector<T> keys_t, values, q_row, dots(static_cast<size_t>(tk)), acc;
  const T scale_t = FromDouble<T>(scale), softcap_t = FromDouble<T>(softcap);
  for (int b = 0; b < batch; ++b) {
    for (int h = 0; h < q_heads; ++h) {
      const int kv_head = h / (q_heads / kv_heads);
      const size_t kv_block = static_cast<size_t>(b) * kv_heads + kv_head;
      if constexpr (kKeyMajor<T>) {
        if (h % (q_heads / kv_heads) == 0) {  // the first query head of its kv head
          TransposeKeys<T>(k.data.data() + kv_block * tk * head_dim, tk, head_dim, FromDouble<T>, keys_t);
          const double* v_block = v.data.data() + kv_block * tk * value_dim;
          values.assign(v_block, v_block + static_cast<size_t>(tk) * value_dim);
        }
      }
      for (int i = 0; i < tq; ++i) {
        if constexpr (kKeyMajor<T>) {
          const double* q_at = q.data.data() + ((static_cast<size_t>(b) * q_heads + h) * tq + i) * head_dim;
          q_row.assign(q_at, q_at + head_dim);
          const uint8_t* visible_row = visible.data() + (static_cast<size_t>(b) * tq + i) * tk;
          const int extent = VisibleExtent(visible_row, tk);  // the dots of visible keys only
          KeyDots<T>(q_row.data(), keys_t, head_dim, tk, extent, dots.data());
          keys.clear();
          scores.clear();
          for (int j = 0; j < extent; ++j) {
            if (visible_row[j] == 0) continue;  // excluded, not −inf arithmetic
            keys.push_back(j);
            scores.push_back(ScoreFromDot<T>(dots[static_cast<size_t>(j)], scale_t, softcap_t, softcap > 0.0, bias, b,
                                             h, i, j));
          }
        } else {
          ScoreRow<T>(q, k, visible, bias, scale, softcap, b, h, i, keys, scores);
        }
        const double lse = SoftmaxRow<T>(scores, probabilities);
        result.lse[(static_cast<size_t>(b) * q_heads + h) * tq + i] = lse;
        if (keys.empty()) {  // no visible key: out 0, lse −inf, flagged (DESIGN §4)
          result.empty_row[static_cast<size_t>(b) * tq + i] = 1;
          continue;
        }
        // out_d = Σ_j P_j v_jd over the visible keys.
        if constexpr (kKeyMajor<T>) {
          acc.assign(static_cast<size_t>(value_dim), T(0));
          for (size_t n = 0; n < keys.size(); ++n)
            AddWeighted<T>(probabilities[n], values.data() + static_cast<size_t>(keys[n]) * value_dim, value_dim,
                           acc.data());
          for (int d = 0; d < value_dim; ++d) result.out.at(b, h, i, d) = ToDouble(acc[static_cast<size_t>(d)]);
          continue;
        }
        // v rows of the visible keys: v_rows[n][d] = v[b, kv_head, keys[n], d]
        v_rows.clear();
        if (value_dim > 0)
          for (int key : keys) v_rows.push_back(&v.at(b, kv_head, key, 0));
        for (int d = 0; d < value_dim; ++d) {
          T acc_d = T(0);
          for (size_t n = 0; n < keys.size(); ++n) {
            acc_d = T(acc_d + T(probabilities[n] * FromDouble<T>(v_rows[n][d])));
          }
          result.out.at(b, h, i, d) = ToDouble(acc_d);
        }
      }
    }
  }
  return result;
}

void EncodeQk(const Scenario& s, TensorD& q, TensorD& k) {
  q = s.q;  // [B, Hq, Tq, D]
  k = s.k;  // [B, Hkv, Tk, D]
  if (!HasQkEncoding(s.c)) return;
  const int current_length = s.length_seen();
  ApplyPositional(s.c, Side::kQuery, q, s.query_positions, current_length);
  ApplyPositional(s.c, Side::kKey, k, s.key_positions, current_length);
  // What an adapter that does not own the positional stage receives: the case dtype.
  for (double& x : q.data) x = RoundTo(s.c.dtype, x);
  for (double& x : k.data) x = RoundTo(s.c.dtype, x);
}

// Every score bias of positional.h (ALiBi, T5, KERPLE, Sandwich) is a function of
// (head, key − query position) only, so each distinct distance is evaluated once
// per head (at its first element, as a hash map by distance would).
namespace {

// slot[e] = the number of distances[e] among the distinct distances in order of first
// appearance (an open-addressing table of twice the size, no sort); returns how many.
size_t NumberDistinct(const std::vector<int64_t>& distances, std::vector<size_t>& slot) {
  const size_t capacity = std::bit_ceil(2 * distances.size());
  const int shift = 64 - std::countr_zero(capacity);
  constexpr size_t kFree = std::numeric_limits<size_t>::max();
  std::vector<int64_t> keys(capacity);
  std::vector<size_t> numbers(capacity, kFree);
  size_t count = 0;
  for (size_t e = 0; e < distances.size(); ++e) {
    size_t at = static_cast<size_t>((static_cast<uint64_t>(distances[e]) * 0x9e3779b97f4a7c15ULL) >> shift);
    while (numbers[at] != kFree && keys[at] != distances[e]) at = (at + 1) & (capacity - 1);
    if (numbers[at] == kFree) {
      keys[at] = distances[e];
      numbers[at] = count++;
    }
    slot[e] = numbers[at];
  }
  return count;
}

}  // namespace

TensorD BiasTensor(const Scenario& s) { return *SharedBiasTensor(s); }

std::shared_ptr<const TensorD> SharedBiasTensor(const Scenario& s) {
  if (const Scenario::BiasCache* cache = s.bias_cache_.get();
      cache != nullptr && cache->query_positions == s.query_positions && cache->key_positions == s.key_positions &&
      cache->c == s.c) {
    return cache->bias;
  }
  TensorD bias(s.batch, s.c.q_heads, s.tq, s.tk);  // [B, Hq, Tq, Tk]
  if (!HasScoreBias(s.c)) return std::make_shared<const TensorD>(std::move(bias));
  // Each element's distance key − query position as a slot [B·Tq·Tk]: distance −
  // lowest when the distances span a range not much larger than the tensor, else
  // its number among the distinct distances (NumberDistinct).
  const size_t rows = static_cast<size_t>(s.batch) * s.tq;
  std::vector<int64_t> distances(rows * static_cast<size_t>(s.tk));
  for (size_t row = 0; row < rows; ++row) {
    const int query_pos = s.query_positions[row];
    const int* key_pos = s.key_positions.data() + row / static_cast<size_t>(s.tq) * s.tk;
    for (int j = 0; j < s.tk; ++j)
      distances[row * s.tk + j] = static_cast<int64_t>(key_pos[j]) - query_pos;
  }
  size_t slots = 0;
  std::vector<size_t> slot(distances.size());
  if (!distances.empty()) {
    const auto [lowest, highest] = std::minmax_element(distances.begin(), distances.end());
    if (*highest - *lowest < 4 * static_cast<int64_t>(distances.size()) + 64) {
      for (size_t e = 0; e < distances.size(); ++e) slot[e] = static_cast<size_t>(distances[e] - *lowest);
      slots = static_cast<size_t>(*highest - *lowest + 1);
    } else {
      slots = NumberDistinct(distances, slot);
    }
  }
  // Per head, ScoreBias at the first element of each slot, in (b, i, j) order.
  std::vector<double> by_slot(slots);
  std::vector<uint8_t> known(slots);
  for (int h = 0; h < s.c.q_heads; ++h) {
    std::fill(known.begin(), known.end(), 0);
    for (size_t row = 0; row < rows; ++row) {
      const size_t b = row / static_cast<size_t>(s.tq);
      const int query_pos = s.query_positions[row];
      double* out = bias.data.data() + ((b * s.c.q_heads + h) * s.tq + row % s.tq) * s.tk;  // bias[b, h, i, ·]
      for (int j = 0; j < s.tk; ++j) {
        const size_t e = row * s.tk + j;
        if (!known[slot[e]]) {
          by_slot[slot[e]] = ScoreBias(s.c, h, query_pos, s.key_positions[b * s.tk + j]);
          known[slot[e]] = 1;
        }
        out[j] = by_slot[slot[e]];
      }
    }
  }
  std::shared_ptr<const TensorD> shared = std::make_shared<const TensorD>(std::move(bias));
  s.bias_cache_ = std::make_shared<const Scenario::BiasCache>(
      Scenario::BiasCache{s.c, s.query_positions, s.key_positions, shared});
  return shared;
}

template <class T>
AttentionResult Attention(const Scenario& s) {
  TensorD q, k;
  EncodeQk(s, q, k);
  if (!HasScoreBias(s.c)) {
    return AttentionCore<T>(q, k, s.v, s.visible, nullptr, s.c.effective_scale(), s.c.softcap);
  }
  const std::shared_ptr<const TensorD> bias = SharedBiasTensor(s);
  return AttentionCore<T>(q, k, s.v, s.visible, bias.get(), s.c.effective_scale(), s.c.softcap);
}

AttentionResult NaiveSameDtype(const Scenario& s) {
  switch (s.c.dtype) {
    case Dtype::kF32:
      return Attention<float>(s);
    case Dtype::kF16:
      return Attention<Eigen::half>(s);
    case Dtype::kBf16:
      return Attention<Eigen::bfloat16>(s);
  }
  return Attention<double>(s);
}

std::vector<double> ProbabilityRow(const TensorD& q, const TensorD& k, const std::vector<uint8_t>& visible,
                                   const TensorD* bias, double scale, double softcap, int b, int h, int i) {
  std::vector<int> keys;
  std::vector<double> scores, probabilities;
  ScoreRow<double>(q, k, visible, bias, scale, softcap, b, h, i, keys, scores);
  SoftmaxRow<double>(scores, probabilities);
  std::vector<double> row(static_cast<size_t>(k.shape[2]), 0.0);  // [Tk]
  for (size_t n = 0; n < keys.size(); ++n) row[static_cast<size_t>(keys[n])] = probabilities[n];
  return row;
}

std::vector<double> AttentionProbabilities(const Scenario& s, int b, int h, int i) {
  TensorD q, k;
  EncodeQk(s, q, k);
  const bool has_bias = HasScoreBias(s.c);
  const TensorD bias = has_bias ? BiasTensor(s) : TensorD();
  return ProbabilityRow(q, k, s.visible, has_bias ? &bias : nullptr, s.c.effective_scale(), s.c.softcap, b, h, i);
}

#define ATTNCHECK_INSTANTIATE(T)                                                                          \
  template AttentionResult AttentionCore<T>(const TensorD&, const TensorD&, const TensorD&,              \
                                            const std::vector<uint8_t>&, const TensorD*, double, double); \
  template AttentionResult Attention<T>(const Scenario&);
ATTNCHECK_INSTANTIATE(double)
ATTNCHECK_INSTANTIATE(float)
ATTNCHECK_INSTANTIATE(Eigen::half)
ATTNCHECK_INSTANTIATE(Eigen::bfloat16)
#undef ATTNCHECK_INSTANTIATE

}  // namespace attncheck::reference
