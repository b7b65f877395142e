// The harness's conversions (harness_internal.h): tensors to the floats an adapter
// receives, representable in the case dtype, slices of heads and tokens, and the
// adapter's outputs back to double.
#include <algorithm>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "adapters/harness_internal.h"
#include "reference/data.h"

namespace attncheck::harness {


// to[e] = float(from[e]) (round to nearest), two at a time where SSE2 converts pairs.
void Narrow(const double* from, size_t n, float* to) {
  size_t e = 0;
#if defined(__SSE2__)
  for (; e + 4 <= n; e += 4) {
    const __m128 low = _mm_cvtpd_ps(_mm_loadu_pd(from + e)), high = _mm_cvtpd_ps(_mm_loadu_pd(from + e + 2));
    _mm_storeu_ps(to + e, _mm_movelh_ps(low, high));
  }
#endif
  for (; e < n; ++e) to[e] = static_cast<float>(from[e]);
}

// to[e] = double(from[e]) (exact), two at a time where SSE2 converts pairs.
void Widen(const float* from, size_t n, double* to) {
  size_t e = 0;
#if defined(__SSE2__)
  for (; e + 4 <= n; e += 4) {
    const __m128 x = _mm_loadu_ps(from + e);
    _mm_storeu_pd(to + e, _mm_cvtps_pd(x));
    _mm_storeu_pd(to + e + 2, _mm_cvtps_pd(_mm_movehl_ps(x, x)));
  }
#endif
  for (; e < n; ++e) to[e] = from[e];
}

// Into `f`, whose storage is reused (the harness keeps it per thread: no allocation per call).
void ToFloat(const TensorD& t, Dtype dtype, TensorF& f) {
  f.shape = t.shape;
  if (dtype == Dtype::kF32) {  // float(RoundTo(f32, x)) is float(x)
    f.data.resize(t.data.size());
    Narrow(t.data.data(), t.data.size(), f.data.data());
    return;
  }
  f.data.resize(t.data.size());
  for (size_t i = 0; i < t.data.size(); ++i) f.data[i] = static_cast<float>(reference::RoundTo(dtype, t.data[i]));
}

TensorF ToFloat(const TensorD& t, Dtype dtype) {
  TensorF f;
  ToFloat(t, dtype, f);
  return f;
}

TensorD ToDouble(std::span<const float> values, int n0, int n1, int n2, int n3) {
  TensorD t(n0, n1, n2, n3);
  for (size_t i = 0; i < t.data.size(); ++i) t.data[i] = values[i];
  return t;
}

// s = t[:, h0:h0+nh, t0:t0+nt, :] (s's storage reused)
void Slice(const TensorF& t, int h0, int nh, int t0, int nt, TensorF& s) {
  const int batch = t.shape[0], dims = t.shape[3];
  s.shape = {batch, nh, nt, dims};
  s.data.resize(static_cast<size_t>(batch) * nh * nt * dims);
  float* out = s.data.data();
  for (int b = 0; b < batch; ++b)
    for (int h = 0; h < nh; ++h) {
      const size_t rows = static_cast<size_t>(nt) * dims;  // tokens t0.. of one head are contiguous
      if (rows > 0) std::copy_n(&t.at(b, h0 + h, t0, 0), rows, out);
      out += rows;
    }
}

std::span<const float> HeadSlice(const TensorF& t, int h0, int nh, TensorF& scratch) {
  if (h0 == 0 && nh == t.shape[1]) return t.data;
  Slice(t, h0, nh, 0, t.shape[2], scratch);
  return scratch.data;
}

// s = positions[:, t0:t0+nt] of a [B, T] array (s's storage reused)
void SlicePositions(const std::vector<int>& positions, int batch, int t, int t0, int nt, std::vector<int>& s) {
  s.clear();
  for (int b = 0; b < batch; ++b) {
    const auto row = positions.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(b) * t + t0);
    s.insert(s.end(), row, row + nt);
  }
}

void Scatter(std::span<const float> part, int nh, int nq, TensorD& out, int h0, int i0, bool accumulate) {
  const int batch = out.shape[0], dv = out.shape[3];
  if (dv == 0 || nq == 0) return;
  const float* from = part.data();
  const size_t rows = static_cast<size_t>(nq) * dv;  // rows i0.. of one head are contiguous
  for (int b = 0; b < batch; ++b)
    for (int h = 0; h < nh; ++h) {
      double* to = &out.at(b, h0 + h, i0, 0);
      if (accumulate) {
        for (size_t e = 0; e < rows; ++e) to[e] += from[e];
      } else {
        Widen(from, rows, to);
      }
      from += rows;
    }
}

}  // namespace attncheck::harness
