// The eigen kernel's backward pass (eigen_adapter.h EigenBackward), with the
// defects the backward mutants switch on (BackwardSlips).
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "adapters/eigen/eigen_adapter.h"

namespace attncheck {

void EigenBackward(const BackwardArgs& args, const BackwardSlips& slips) {
  const AttentionArgs& a = args.forward;
  if (a.apply_positional) throw std::invalid_argument("eigen backward: q and k arrive encoded");
  if (a.apply_bias) throw std::invalid_argument("eigen: does not apply score biases itself");
  const int batch = a.batch, hq = a.q_heads, hkv = a.kv_heads, tq = a.tq, tk = a.tk, dim = a.head_dim,
            dv = a.value_dim;
  const int group = hq / hkv;
  const float scale = static_cast<float>(a.scale), softcap = static_cast<float>(a.spec.softcap);
  const std::vector<float> mask = EigenAdditiveMask(a.mask, static_cast<size_t>(batch) * tq * tk, slips.descriptor);
  std::fill(args.dq.begin(), args.dq.end(), 0.0f);
  std::fill(args.dk.begin(), args.dk.end(), 0.0f);
  std::fill(args.dv.begin(), args.dv.end(), 0.0f);
  const auto q_at = [&](int b, int h, int i) { return a.q.data() + ((static_cast<size_t>(b) * hq + h) * tq + i) * dim; };
  const auto k_at = [&](int b, int g, int j) { return a.k.data() + ((static_cast<size_t>(b) * hkv + g) * tk + j) * dim; };
  const auto v_at = [&](int b, int g, int j) { return a.v.data() + ((static_cast<size_t>(b) * hkv + g) * tk + j) * dv; };
  std::vector<float> z(static_cast<size_t>(tk)), lse(static_cast<size_t>(tq)), o(static_cast<size_t>(dv));
  std::vector<float> scores(static_cast<size_t>(tq) * tk);
  std::vector<uint8_t> visible(static_cast<size_t>(tq) * tk);
  for (int b = 0; b < batch; ++b)
    for (int h = 0; h < hq; ++h) {
      const int g = h / group;
      int kv_target = g;  // where this head's dK, dV go
      if (slips.kv_sum == BackwardSlips::KvSum::kModulo) kv_target = h % hkv;
      const bool adds_to_kv = slips.kv_sum != BackwardSlips::KvSum::kFirstHeadOnly || h % group == 0;
      // scores and each row's log-sum-exp (what a FlashAttention forward saves)
      for (int i = 0; i < tq; ++i) {
        const float* m = mask.data() + (static_cast<size_t>(b) * tq + i) * tk;
        float max_score = -std::numeric_limits<float>::infinity();
        float max_raw = -std::numeric_limits<float>::infinity();  // over every key (reported_lse_unmasked)
        for (int j = 0; j < tk; ++j) {
          float dot = 0.0f;
          const float* q = q_at(b, h, i);
          const float* k = k_at(b, g, j);
          for (int d = 0; d < dim; ++d) dot += q[d] * k[d];
          float s = scale * dot;
          if (softcap > 0.0f) s = softcap * std::tanh(s / softcap);
          max_raw = std::max(max_raw, s);
          const size_t e = static_cast<size_t>(i) * tk + j;
          visible[e] = m[j] != -std::numeric_limits<float>::infinity();
          scores[e] = s + (visible[e] ? m[j] : 0.0f);
          if (visible[e]) max_score = std::max(max_score, scores[e]);
        }
        float sum = 0.0f;
        for (int j = 0; j < tk; ++j)
          if (visible[static_cast<size_t>(i) * tk + j]) sum += std::exp(scores[static_cast<size_t>(i) * tk + j] - max_score);
        lse[i] = max_score + std::log(sum);  // −inf for a row with no visible key
        if (args.lse.empty()) continue;
        float reported = lse[i];
        if (slips.reported_lse_unmasked) {
          float every = 0.0f;
          for (int j = 0; j < tk; ++j) {
            const size_t e = static_cast<size_t>(i) * tk + j;
            every += std::exp(scores[e] - (visible[e] ? m[j] : 0.0f) - max_raw);
          }
          reported = max_raw + std::log(every);
        }
        args.lse[(static_cast<size_t>(b) * hq + h) * tq + i] = reported;
      }
      for (int i = 0; i < tq; ++i) {
        const size_t row = static_cast<size_t>(i) * tk;
        const bool empty = std::none_of(visible.begin() + static_cast<std::ptrdiff_t>(row),
                                        visible.begin() + static_cast<std::ptrdiff_t>(row + tk), [](uint8_t x) { return x != 0; });
        if (empty && !slips.empty_rows_nan) continue;
        // the log-sum-exp P is recomputed from: the saved one where handed over (backward_saved), else its own
        const int lse_row = slips.lse_row_shift != 0 ? ((i + slips.lse_row_shift) % tq + tq) % tq : i;
        const float row_lse = args.saved_lse.empty() ? lse[static_cast<size_t>(lse_row)]
                                                     : args.saved_lse[(static_cast<size_t>(b) * hq + h) * tq + lse_row];
        // P over the visible keys (or over every key where a slip ignores the mask)
        const auto weight = [&](int j, bool unmasked) -> float {
          if (unmasked) {  // softmax of the raw scores over every key of the row
            float max_raw = -std::numeric_limits<float>::infinity(), sum = 0.0f;
            for (int n = 0; n < tk; ++n) max_raw = std::max(max_raw, z[n]);
            for (int n = 0; n < tk; ++n) sum += std::exp(z[n] - max_raw);
            return std::exp(z[j] - max_raw) / sum;
          }
          if (empty) return std::exp(-std::numeric_limits<float>::infinity() - row_lse);  // NaN: −inf − (−inf)
          return visible[row + j] ? std::exp(scores[row + j] - row_lse) : 0.0f;
        };
        const bool any_unmasked = slips.dkdv_unmasked || slips.dq_unmasked;
        if (any_unmasked) {
          for (int j = 0; j < tk; ++j) {
            float dot = 0.0f;
            for (int d = 0; d < dim; ++d) dot += q_at(b, h, i)[d] * k_at(b, g, j)[d];
            z[j] = scale * dot;
          }
        }
        const float* dout = args.dout.data() + ((static_cast<size_t>(b) * hq + h) * tq + i) * dv;
        std::fill(o.begin(), o.end(), 0.0f);
        for (int j = 0; j < tk; ++j) {
          if (!visible[row + j] && !empty) continue;
          const float p = weight(j, false);
          for (int d = 0; d < dv; ++d) o[d] += p * v_at(b, g, j)[d];
        }
        float delta = 0.0f;
        for (int d = 0; d < dv; ++d) delta += dout[d] * o[d];
        float* dq = args.dq.data() + ((static_cast<size_t>(b) * hq + h) * tq + i) * dim;
        for (int j = 0; j < tk; ++j) {
          const bool read = visible[row + j] || empty;
          if (!read && !any_unmasked) continue;
          const float* v = v_at(b, g, j);
          const float* k = k_at(b, g, j);
          float dp = 0.0f;
          for (int d = 0; d < dv; ++d) dp += dout[d] * v[d];
          float t = 0.0f;
          if (softcap > 0.0f) {
            float dot = 0.0f;
            for (int d = 0; d < dim; ++d) dot += q_at(b, h, i)[d] * k[d];
            t = std::tanh(scale * dot / softcap);
          }
          const float derivative = softcap > 0.0f && !slips.softcap_derivative_missing ? 1.0f - t * t : 1.0f;
          const float p_q = read ? weight(j, slips.dq_unmasked) : (slips.dq_unmasked ? weight(j, true) : 0.0f);
          const float p_kv = read ? weight(j, slips.dkdv_unmasked) : (slips.dkdv_unmasked ? weight(j, true) : 0.0f);
          const float dz_q = p_q * (dp - delta) * derivative;
          const float dz_kv = p_kv * (dp - delta) * derivative;
          if (p_q != 0.0f || std::isnan(p_q))
            for (int d = 0; d < dim; ++d) dq[d] += scale * dz_q * k[d];
          if (!adds_to_kv || (p_kv == 0.0f && !std::isnan(p_kv))) continue;
          float* dk = args.dk.data() + ((static_cast<size_t>(b) * hkv + kv_target) * tk + j) * dim;
          float* dvv = args.dv.data() + ((static_cast<size_t>(b) * hkv + kv_target) * tk + j) * dv;
          for (int d = 0; d < dim; ++d) dk[d] += scale * dz_kv * q_at(b, h, i)[d];
          for (int d = 0; d < dv; ++d) dvv[d] += p_kv * dout[d];
        }
      }
    }
}

}  // namespace attncheck
