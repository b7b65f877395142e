// Counter-based generator: splitmix64 (Steele, Lea, Flood, "Fast splittable
// pseudorandom number generators", OOPSLA 2014), one 64-bit hash per element →
// approximately normal values as the Irwin–Hall sum of its four 16-bit quarters
// (mean 0, variance 1, |z| ≤ 2√3); then rounding to the case dtype.
#include "reference/data.h"

#include <immintrin.h>

#include <bit>
#include <cmath>
#include <limits>
#include <numbers>
#include <optional>

#include "cases/value_profiles.h"

namespace attncheck::reference {
namespace {

inline uint64_t SplitMix64(uint64_t x) {
  uint64_t z = x + 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Hash of the element's coordinates and a stream number (for several draws per
// element), as a chain: the part up to the token is shared by every d of it.
uint64_t TokenPrefix(uint64_t seed, int tensor, int b, int h, int64_t token) {
  uint64_t x = SplitMix64(seed);
  x = SplitMix64(x ^ static_cast<uint64_t>(tensor));
  x = SplitMix64(x ^ static_cast<uint64_t>(static_cast<int64_t>(b)));
  x = SplitMix64(x ^ static_cast<uint64_t>(static_cast<int64_t>(h)));
  return SplitMix64(x ^ static_cast<uint64_t>(token));
}

inline uint64_t CounterFromPrefix(uint64_t prefix, int d, int stream) {
  const uint64_t x = SplitMix64(prefix ^ static_cast<uint64_t>(static_cast<int64_t>(d)));
  return SplitMix64(x ^ static_cast<uint64_t>(stream));
}

// u in [0, 1) from the top 53 bits.
inline double Uniform(uint64_t bits) { return static_cast<double>(bits >> 11) * 0x1.0p-53; }

// Irwin–Hall: the sum of four uniforms on [0, 1) has mean 2 and variance 1/3.
// The quarters are summed as integers (≤ 4·65535: every partial sum is exact in
// double too, so the value is the one a double sum gives) and converted once.
inline double Normal(uint64_t bits) {
  const uint64_t sum = (bits & 0xffff) + ((bits >> 16) & 0xffff) + ((bits >> 32) & 0xffff) + (bits >> 48);
  return (static_cast<double>(sum) * 0x1.0p-16 - 2.0) * std::numbers::sqrt3;
}

// Round-to-odd double → float: truncation with a sticky last bit. Rounding the
// result once more to a format with ≤ 22 significant bits equals rounding x once.
float RoundToOddFloat(double x) {
  float f = static_cast<float>(x);
  if (std::isnan(x) || std::isinf(f) || static_cast<double>(f) == x) return f;
  // f and its neighbour towards x bracket x; keep the one with an odd last bit.
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  if ((bits & 1U) == 0U) {
    f = std::nextafter(f, static_cast<double>(f) < x ? std::numeric_limits<float>::infinity()
                                                     : -std::numeric_limits<float>::infinity());
  }
  return f;
}

}  // namespace

int64_t TokenIdentity(const RowSpec& row, int slot) {
  if (slot < 0) return slot;  // a leading query (Tq > Tk): −E … −1
  const int first_real = row.left_pad;
  const int real_tokens = row.real_tokens();
  if (slot >= first_real && slot < first_real + real_tokens) return slot - first_real;
  return kPadTokenBase + slot;
}

namespace {

// Element's value given its hash (stream 0).
double ElementFromBits(uint64_t bits1, ValueProfile profile, int tensor, int64_t token, int d) {
  switch (profile) {
    case ValueProfile::kNormal:
      return Normal(bits1);
    case ValueProfile::kLargeLogits:
      return (tensor == kDataValue ? 1.0 : kLargeLogitFactor) * Normal(bits1);
    case ValueProfile::kTies:
      return static_cast<double>(static_cast<int>(bits1 % 3) - 1);
    case ValueProfile::kExtremeLogits:  // the last head dim of q, k: CaseElement
      return Normal(bits1);
    case ValueProfile::kNearCancellation: {
      if (tensor != kDataValue) return Normal(bits1);
      const bool positive = ((token + d) % 2) == 0;
      const double magnitude = 50.0 + 0.25 * Uniform(bits1);
      return positive ? magnitude : -magnitude;
    }
  }
  return 0.0;
}

}  // namespace

double Element(uint64_t seed, ValueProfile profile, int tensor, int b, int h, int64_t token, int d) {
  const uint64_t bits1 = CounterFromPrefix(TokenPrefix(seed, tensor, b, h, token), d, 0);
  return ElementFromBits(bits1, profile, tensor, token, d);
}

double ExtremeLogitComponent(const Case& c, int tensor, int b, int h, int64_t token) {
  if (tensor == kDataKey) return kExtremeKeyComponent;
  if (tensor != kDataQuery) return 0.0;
  const uint64_t bits = SplitMix64(TokenPrefix(c.seed, tensor, b, h, token) ^ 0x6578747265ULL);  // "extre"
  const size_t level = static_cast<size_t>(bits % 4);
  const double dot = c.dtype == Dtype::kF16 ? kExtremeF16Dots[level] : kExtremeWideScores[level] / c.effective_scale();
  return dot / kExtremeKeyComponent;
}

double CaseElement(const Case& c, int tensor, int b, int h, int64_t token, int d) {
  if (c.profile == ValueProfile::kExtremeLogits && d == c.head_dim - 1 && tensor != kDataValue) {
    return RoundTo(c.dtype, ExtremeLogitComponent(c, tensor, b, h, token));
  }
  return RoundTo(c.dtype, Element(c.seed, c.profile, tensor, b, h, token, d));
}

namespace {

// GCC 12's AVX-512 headers trip -Wmaybe-uninitialized on their own undefined vectors.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// SplitMix64, lane by lane.
__attribute__((target("avx512f,avx512dq"))) inline __m512i SplitMix64Wide(__m512i x) {
  __m512i z = _mm512_add_epi64(x, _mm512_set1_epi64(static_cast<int64_t>(0x9e3779b97f4a7c15ULL)));
  z = _mm512_mullo_epi64(_mm512_xor_si512(z, _mm512_srli_epi64(z, 30)),
                         _mm512_set1_epi64(static_cast<int64_t>(0xbf58476d1ce4e5b9ULL)));
  z = _mm512_mullo_epi64(_mm512_xor_si512(z, _mm512_srli_epi64(z, 27)),
                         _mm512_set1_epi64(static_cast<int64_t>(0x94d049bb133111ebULL)));
  return _mm512_xor_si512(z, _mm512_srli_epi64(z, 31));
}

// An f32 row of factor·Normal, eight elements per step where the CPU has AVX-512DQ
// (64-bit multiplies and int64 → double): the same integer hash, an exact conversion
// and scaling, the same double products and one rounding to float, so the values
// are the scalar loop's.
__attribute__((target("avx512f,avx512dq"))) void NormalRowF32Wide(uint64_t prefix, int dims, double factor,
                                                                   double* out) {
  const __m512i lanes = _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0);
  const __m512i quarter = _mm512_set1_epi64(0xffff);
  int d = 0;
  for (; d + 8 <= dims; d += 8) {
    const __m512i index = _mm512_add_epi64(_mm512_set1_epi64(d), lanes);
    const __m512i bits = SplitMix64Wide(SplitMix64Wide(_mm512_xor_si512(_mm512_set1_epi64(static_cast<int64_t>(prefix)), index)));
    const __m512i sum = _mm512_add_epi64(
        _mm512_add_epi64(_mm512_and_si512(bits, quarter), _mm512_and_si512(_mm512_srli_epi64(bits, 16), quarter)),
        _mm512_add_epi64(_mm512_and_si512(_mm512_srli_epi64(bits, 32), quarter), _mm512_srli_epi64(bits, 48)));
    const __m512d scaled = _mm512_sub_pd(_mm512_mul_pd(_mm512_cvtepi64_pd(sum), _mm512_set1_pd(0x1.0p-16)),
                                         _mm512_set1_pd(2.0));
    const __m512d normal = _mm512_mul_pd(scaled, _mm512_set1_pd(std::numbers::sqrt3));
    _mm512_storeu_pd(out + d, _mm512_cvtps_pd(_mm512_cvtpd_ps(_mm512_mul_pd(_mm512_set1_pd(factor), normal))));
  }
  for (; d < dims; ++d) out[d] = static_cast<double>(static_cast<float>(factor * Normal(CounterFromPrefix(prefix, d, 0))));
}

#pragma GCC diagnostic pop

// The factor of a profile whose values are factor·Normal (as ElementFromBits gives them).
std::optional<double> NormalFactor(ValueProfile profile, int tensor) {
  switch (profile) {
    case ValueProfile::kNormal:
    case ValueProfile::kExtremeLogits:
      return 1.0;
    case ValueProfile::kLargeLogits:
      return tensor == kDataValue ? 1.0 : kLargeLogitFactor;
    default:
      return std::nullopt;
  }
}

const bool kHasAvx512Dq = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");

}  // namespace

void CaseElementRow(const Case& c, int tensor, int b, int h, int64_t token, int dims, double* out) {
  const uint64_t prefix = TokenPrefix(c.seed, tensor, b, h, token);
  // One loop per profile, so the element's formula is inlined (the same values
  // as ElementFromBits).
  auto fill = [&](auto value) {
    if (c.dtype == Dtype::kF32 && kHasAvx512Dq) {  // every profile but kTies and kNearCancellation (value 0)
      if (const std::optional<double> factor = NormalFactor(c.profile, tensor)) return NormalRowF32Wide(prefix, dims, *factor, out);
    }
    if (c.dtype == Dtype::kF32) {  // RoundTo(kF32, ·), without the dtype test per element
      for (int d = 0; d < dims; ++d)
        out[d] = static_cast<double>(static_cast<float>(value(CounterFromPrefix(prefix, d, 0), d)));
      return;
    }
    for (int d = 0; d < dims; ++d) out[d] = RoundTo(c.dtype, value(CounterFromPrefix(prefix, d, 0), d));
  };
  switch (c.profile) {
    case ValueProfile::kNormal:
      fill([](uint64_t bits, int) { return Normal(bits); });
      return;
    case ValueProfile::kLargeLogits: {
      const double factor = tensor == kDataValue ? 1.0 : kLargeLogitFactor;
      fill([factor](uint64_t bits, int) { return factor * Normal(bits); });
      return;
    }
    case ValueProfile::kExtremeLogits:
      fill([](uint64_t bits, int) { return Normal(bits); });
      if (tensor != kDataValue && dims == c.head_dim) {
        out[dims - 1] = RoundTo(c.dtype, ExtremeLogitComponent(c, tensor, b, h, token));
      }
      return;
    default:
      fill([&](uint64_t bits, int d) { return ElementFromBits(bits, c.profile, tensor, token, d); });
      return;
  }
}

Eigen::half HalfFromDouble(double x) { return Eigen::half(RoundToOddFloat(x)); }
Eigen::bfloat16 Bfloat16FromDouble(double x) { return Eigen::bfloat16(RoundToOddFloat(x)); }

double RoundToNarrow(Dtype dtype, double x) {
  switch (dtype) {
    case Dtype::kF32:
      return static_cast<double>(static_cast<float>(x));
    case Dtype::kF16:
      return static_cast<double>(static_cast<float>(HalfFromDouble(x)));
    case Dtype::kBf16:
      return static_cast<double>(static_cast<float>(Bfloat16FromDouble(x)));
  }
  return x;
}

}  // namespace attncheck::reference
