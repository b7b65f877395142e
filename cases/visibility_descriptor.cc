// Window conventions of cases/visibility_descriptor.h: FlashAttention's (left,
// right), W keys including self, and cuDNN's diagonal band left bound (PyTorch's
// cuDNN attention passes window_size_left + 1 to set_diagonal_band_left_bound).
#include "cases/visibility_descriptor.h"

namespace attncheck {

Window WindowFromKeysIncludingSelf(int keys) { return {keys - 1, 0}; }

std::optional<int> KeysIncludingSelf(const Window& window) {
  if (window.left < 0 || window.right != 0) return std::nullopt;
  return window.left + 1;
}

std::optional<int> CudnnLeftBound(const Window& window) {
  if (window.left < 0) return std::nullopt;
  return window.left + 1;
}

Window WindowFromCudnnLeftBound(int left_bound, int right_bound) { return {left_bound - 1, right_bound}; }

}  // namespace attncheck
