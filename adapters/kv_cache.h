// The KV cache of an in-tree Session: appended chunks k [B, Hkv, n, D], v
// [B, Hkv, n, Dv] and positions [B, n], kept per (b, kv head) as rows [T, D] in
// the storage type S, with the concatenated [B, Hkv, Tk, D] and [B, Tk] views.
#pragma once

#include <cstddef>
#include <span>
#include <type_traits>
#include <vector>

namespace attncheck::adapters {

template <class S>
class KvCache {
 public:
  KvCache(int batch, int kv_heads, int head_dim, int value_dim)
      : batch_(batch), kv_heads_(kv_heads), head_dim_(head_dim), value_dim_(value_dim),
        keys_(static_cast<size_t>(batch) * kv_heads), values_(keys_.size()), positions_(static_cast<size_t>(batch)) {}

  // Stores n new tokens, converted to S. `on_key(S* row, int position)` runs on
  // each stored key row [D] in place (a kernel that rotates keys as it caches them).
  template <class OnKey>
  void Append(std::span<const float> k, std::span<const float> v, std::span<const int> positions, int n,
              OnKey&& on_key) {
    const int d = head_dim_, dv = value_dim_;
    for (int b = 0; b < batch_; ++b) {
      for (int h = 0; h < kv_heads_; ++h) {
        const size_t block = static_cast<size_t>(b) * kv_heads_ + h;
        std::vector<S>& keys = keys_[block];
        std::vector<S>& values = values_[block];
        for (int t = 0; t < n; ++t) {
          const size_t row = block * n + t;  // (b, h, t) in k [B, Hkv, n, D]
          const size_t start = keys.size();
          Store(keys, k.subspan(row * d, d));
          on_key(keys.data() + start, positions[static_cast<size_t>(b) * n + t]);
          Store(values, v.subspan(row * dv, dv));
        }
      }
      const std::span<const int> row_positions = positions.subspan(static_cast<size_t>(b) * n, n);
      positions_[b].insert(positions_[b].end(), row_positions.begin(), row_positions.end());
    }
    length_ += n;
  }
  void Append(std::span<const float> k, std::span<const float> v, std::span<const int> positions, int n) {
    Append(k, v, positions, n, [](S*, int) {});
  }

  int length() const { return length_; }  // Tk: tokens appended so far
  // keys [Tk, D] and values [Tk, Dv] of batch row b, kv head h
  const S* keys(int b, int h) const { return keys_[static_cast<size_t>(b) * kv_heads_ + h].data(); }
  const S* values(int b, int h) const { return values_[static_cast<size_t>(b) * kv_heads_ + h].data(); }

  // The concatenated views: k [B, Hkv, Tk, D], v [B, Hkv, Tk, Dv], positions [B, Tk].
  std::vector<S> AllKeys() const { return Concatenate(keys_); }
  std::vector<S> AllValues() const { return Concatenate(values_); }
  std::vector<int> AllPositions() const { return Concatenate(positions_); }

 private:
  static void Store(std::vector<S>& rows, std::span<const float> row) {
    if constexpr (std::is_same_v<S, float>) {
      rows.insert(rows.end(), row.begin(), row.end());
    } else {
      for (float x : row) rows.push_back(static_cast<S>(x));
    }
  }
  template <class T>
  static std::vector<T> Concatenate(const std::vector<std::vector<T>>& blocks) {
    std::vector<T> all;
    for (const std::vector<T>& block : blocks) all.insert(all.end(), block.begin(), block.end());
    return all;
  }

  int batch_, kv_heads_, head_dim_, value_dim_;
  int length_ = 0;
  std::vector<std::vector<S>> keys_, values_;  // [B·Hkv] of [T, D] / [T, Dv]
  std::vector<std::vector<int>> positions_;    // [B] of [T]
};

}  // namespace attncheck::adapters
