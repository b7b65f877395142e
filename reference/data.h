// Counter-based data generator (DESIGN §2): every element of q, k, v is a pure
// function of (seed, profile, tensor, b, h, token, d) through splitmix64 hashing
// (Steele et al. 2014) and Box–Muller, then rounded to the case dtype.
#pragma once

#include <cstdint>
#include <type_traits>

#include <Eigen/Core>

#include "cases/case.h"

namespace attncheck::reference {

enum DataTensor : int { kDataQuery = 0, kDataKey = 1, kDataValue = 2 };

// Token identity of a key slot, the `token` argument of Element: a real token's
// index among the row's REAL tokens (0, 1, …, in slot order, across documents),
// so adding pads never changes a real token's values; a pad slot's identity is
// kPadTokenBase + slot. A query takes the identity of its query slot; a leading
// query (slot < 0, Tq > Tk) the slot itself.
inline constexpr int64_t kPadTokenBase = 1'000'000;
int64_t TokenIdentity(const RowSpec& row, int slot);

// The value (in double, before rounding) of element d of token `token` of head h
// (query head for q, kv head for k and v) of batch row b in tensor 0 q, 1 k, 2 v.
// Profiles: normal N(0, 1); large-logits q, k ×8; ties values in {−1, 0, 1};
// near-cancellation v = ±(50 + U[0, 0.25)) with sign (−1)^(token + d), q, k normal.
// extreme-logits: normal here; the case-aware CaseElement sets the last head dim
// of q and k (ExtremeLogitComponent) so every score of a query row is shifted by
// one large offset while the differences between its keys stay O(1).
double Element(uint64_t seed, ValueProfile profile, int tensor, int b, int h, int64_t token, int d);

// extreme-logits, q[D−1] and k[D−1]: k[D−1] = 64 for every key, q[D−1] = S / (64·scale)
// with the row's score offset S picked per (b, h, query token) from ±1.5e4, ±6e4
// (f32, bf16: rows below −5e4 defeat a finite running-max sentinel), or
// S = scale·{±8e3, ±3.2e4} in f16 (q·k itself stays under half of f16's 65504, so
// no score rounds to ±inf). Other dims and v are normal.
double ExtremeLogitComponent(const Case& c, int tensor, int b, int h, int64_t token);

// Element rounded to the case dtype: what both the oracle and the adapter receive.
double CaseElement(const Case& c, int tensor, int b, int h, int64_t token, int d);
// Elements 0 … dims−1 of one token, out[d] = CaseElement(c, tensor, b, h, token, d):
// the coordinates' hash chain up to the token is computed once per row.
void CaseElementRow(const Case& c, int tensor, int b, int h, int64_t token, int dims, double* out);

// x rounded to nearest-even in the dtype (f32, f16, bf16); overflow gives ±inf.
// f32 (the common case, one conversion) is inline; f16 and bf16 go through
// RoundToNarrow.
double RoundToNarrow(Dtype dtype, double x);
inline double RoundTo(Dtype dtype, double x) {
  return dtype == Dtype::kF32 ? static_cast<double>(static_cast<float>(x)) : RoundToNarrow(dtype, x);
}

// Correctly rounded conversions from double (single rounding: double → float
// rounds to odd, then float → half / bfloat16 rounds to nearest-even).
Eigen::half HalfFromDouble(double x);
Eigen::bfloat16 Bfloat16FromDouble(double x);

// Conversion from double into the scalar type of the same-dtype models.
template <class T>
T FromDouble(double x) {
  if constexpr (std::is_same_v<T, Eigen::half>) {
    return HalfFromDouble(x);
  } else if constexpr (std::is_same_v<T, Eigen::bfloat16>) {
    return Bfloat16FromDouble(x);
  } else {
    return static_cast<T>(x);
  }
}

}  // namespace attncheck::reference
