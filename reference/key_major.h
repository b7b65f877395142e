// The naive models' inner loops a key (or an output dim) at a time side by side:
// each sum keeps the naive loop's own order and roundings (dot_j = dot_j + q_d·k_jd
// over d = 0, 1, …; acc_d = acc_d + P_n·v_nd over n), but sums of different keys or
// dims are independent, so Eigen's packets carry several at once (pmul, then padd). Same bits as the
// one-at-a-time loops (no fused multiply-add: each product is rounded, then added).
#pragma once

#include <cstddef>
#include <type_traits>
#include <vector>

#include <Eigen/Core>

namespace attncheck::reference {

template <class T>
using ArrayMap = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
template <class T>
using ConstArrayMap = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;

// The loops below in AVX2's wider registers (key_major_wide.cc), taken where the CPU
// has AVX2: the same operations per key or dim, so the same bits.
extern const bool kKeyMajorWide;
// KeyDotsWide computes the keys of whole registers below count and returns the first
// key it left (the rest go one at a time, as in KeyDots).
int KeyDotsWide(const double* q, const double* keys_t, int head_dim, int tk, int count, double* dots);
int KeyDotsWide(const float* q, const float* keys_t, int head_dim, int tk, int count, float* dots);
void AddWeightedWide(double weight, const double* value, int value_dim, double* acc);
void AddWeightedWide(float weight, const float* value, int value_dim, float* acc);

template <class T>
constexpr bool kHasWide = std::is_same_v<T, double> || std::is_same_v<T, float>;

// keys_t [D, Tk] = round(k[j, d]) of one head's keys k [Tk, D] (row-major, storage reused).
template <class T, class Round>
void TransposeKeys(const double* k, int tk, int head_dim, Round round, std::vector<T>& keys_t) {
  keys_t.resize(static_cast<size_t>(head_dim) * tk);
  for (int j = 0; j < tk; ++j)
    for (int d = 0; d < head_dim; ++d) keys_t[static_cast<size_t>(d) * tk + j] = round(k[static_cast<size_t>(j) * head_dim + d]);
}

// 1 + the last key row[0, tk) marks visible (0 when none): the keys a row's dots need.
inline int VisibleExtent(const unsigned char* row, int tk) {
  int extent = tk;
  while (extent > 0 && row[extent - 1] == 0) --extent;
  return extent;
}

// dots[j] = Σ_d q[d]·keys_t[d, j] for the keys j < count ≤ tk of the head, in T,
// from 0 in d order: four packets of keys at a time kept in registers over d, then
// one packet, then one key at a time. Each dot is the same whatever count is.
template <class T>
void KeyDots(const T* q, const std::vector<T>& keys_t, int head_dim, int tk, int count, T* dots) {
  namespace ei = Eigen::internal;
  using Packet = typename ei::packet_traits<T>::type;
  constexpr int kLanes = ei::packet_traits<T>::size;
  const T* k = keys_t.data();
  int j = 0;
  bool wide = false;
  if constexpr (kHasWide<T>) wide = kKeyMajorWide;
  if (wide) j = KeyDotsWide(q, k, head_dim, tk, count, dots);
  for (; !wide && j + 4 * kLanes <= count; j += 4 * kLanes) {
    Packet a0 = ei::pset1<Packet>(T(0)), a1 = a0, a2 = a0, a3 = a0;
    for (int d = 0; d < head_dim; ++d) {
      const Packet qd = ei::pset1<Packet>(q[d]);
      const T* row = k + static_cast<size_t>(d) * tk + j;
      a0 = ei::padd(a0, ei::pmul(qd, ei::ploadu<Packet>(row)));
      a1 = ei::padd(a1, ei::pmul(qd, ei::ploadu<Packet>(row + kLanes)));
      a2 = ei::padd(a2, ei::pmul(qd, ei::ploadu<Packet>(row + 2 * kLanes)));
      a3 = ei::padd(a3, ei::pmul(qd, ei::ploadu<Packet>(row + 3 * kLanes)));
    }
    ei::pstoreu(dots + j, a0);
    ei::pstoreu(dots + j + kLanes, a1);
    ei::pstoreu(dots + j + 2 * kLanes, a2);
    ei::pstoreu(dots + j + 3 * kLanes, a3);
  }
  for (; !wide && j + kLanes <= count; j += kLanes) {
    Packet a = ei::pset1<Packet>(T(0));
    for (int d = 0; d < head_dim; ++d)
      a = ei::padd(a, ei::pmul(ei::pset1<Packet>(q[d]), ei::ploadu<Packet>(k + static_cast<size_t>(d) * tk + j)));
    ei::pstoreu(dots + j, a);
  }
  for (; j < count; ++j) {
    T dot = T(0);
    for (int d = 0; d < head_dim; ++d) {
      const T product = q[d] * k[static_cast<size_t>(d) * tk + j];
      dot = dot + product;
    }
    dots[j] = dot;
  }
}

// acc[d] += weight·value[d] over the Dv dims of one value row.
template <class T>
void AddWeighted(T weight, const T* value, int value_dim, T* acc) {
  if constexpr (kHasWide<T>) {
    if (kKeyMajorWide) return AddWeightedWide(weight, value, value_dim, acc);
  }
  ArrayMap<T>(acc, value_dim) += weight * ConstArrayMap<T>(value, value_dim);
}

}  // namespace attncheck::reference
