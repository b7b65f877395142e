// A dense row-major 4-d tensor [n0, n1, n2, n3], the only tensor type the
// harness passes around: q [B, Hq, Tq, D], k [B, Hkv, Tk, D], v [B, Hkv, Tk, Dv].
#pragma once

#include <array>
#include <cassert>
#include <cstddef>
#include <vector>

namespace attncheck {

template <class T>
struct Tensor {
  std::array<int, 4> shape{0, 0, 0, 0};
  std::vector<T> data;

  Tensor() = default;
  Tensor(int n0, int n1, int n2, int n3, T fill = T{})
      : shape{n0, n1, n2, n3}, data(static_cast<size_t>(n0) * n1 * n2 * n3, fill) {}

  size_t index(int i0, int i1, int i2, int i3) const {
    assert(i0 >= 0 && i0 < shape[0] && i1 >= 0 && i1 < shape[1] && i2 >= 0 && i2 < shape[2] &&
           i3 >= 0 && i3 < shape[3]);
    return ((static_cast<size_t>(i0) * shape[1] + i1) * shape[2] + i2) * shape[3] + i3;
  }
  T& at(int i0, int i1, int i2, int i3) { return data[index(i0, i1, i2, i3)]; }
  const T& at(int i0, int i1, int i2, int i3) const { return data[index(i0, i1, i2, i3)]; }
  size_t size() const { return data.size(); }
  bool operator==(const Tensor&) const = default;

  template <class U>
  Tensor<U> cast() const {
    Tensor<U> t;
    t.shape = shape;
    t.data.reserve(data.size());
    for (const T& x : data) t.data.push_back(static_cast<U>(x));
    return t;
  }
};

using TensorD = Tensor<double>;
using TensorF = Tensor<float>;

}  // namespace attncheck
