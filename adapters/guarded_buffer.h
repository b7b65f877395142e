// One buffer handed to an adapter inside NaN-filled guard margins (DESIGN §5):
// [kMargin guard][body][kMargin guard]. Used by GuardedCall (adapters/guarded_call.h),
// which declares, hands out and checks them; nothing else builds one.
#pragma once

#include <algorithm>
#include <bit>
#include <climits>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <fmt/format.h>

namespace attncheck::guarded {

// Margins hold a pattern no correct kernel writes (a signalling NaN for floats,
// 0xA5 bytes, INT_MIN); an output body starts as a quiet NaN with a payload
// arithmetic never produces, so an element still holding it bitwise was never written.
constexpr size_t kMargin = 64;
constexpr uint32_t kGuardFloatBits = 0x7FA5A5A5u;     // signalling NaN (quiet bit clear)
constexpr uint32_t kSentinelFloatBits = 0x7FDEAD5Eu;  // quiet NaN, payload 0x1EAD5E

template <class T>
T GuardValue() {
  if constexpr (std::is_same_v<T, float>) {
    return std::bit_cast<float>(kGuardFloatBits);
  } else if constexpr (std::is_same_v<T, int>) {
    return INT_MIN;
  } else {
    static_assert(std::is_same_v<T, uint8_t>);
    return static_cast<uint8_t>(0xA5);
  }
}

inline std::string Elements(size_t n) { return fmt::format("{} element{}", n, n == 1 ? "" : "s"); }

inline std::string MarginText(size_t before, size_t after) {
  if (before > 0 && after > 0) return Elements(before) + " before, " + Elements(after) + " after";
  return before > 0 ? Elements(before) + " before" : Elements(after) + " after";
}

// Storage for guarded buffers, reused across runs (a law runs an adapter many
// times per case): a buffer taken from the pool is resized and every guard and
// body element rewritten, so nothing of an earlier run survives in it.
template <class T>
std::vector<std::vector<T>>& StoragePool() {
  thread_local std::vector<std::vector<T>> pool;
  return pool;
}

template <class T>
class Guarded {
 public:
  // An input buffer holding `values`, which stay alive and unchanged while the
  // buffer lives: they are the snapshot for the change check.
  Guarded(std::string_view name, std::span<const T> values) : name_(name), n_(values.size()), snapshot_(values) {
    Allocate();
    if (n_ > 0) std::memcpy(storage_.data() + kMargin, values.data(), n_ * sizeof(T));
  }
  // An output buffer of n elements, body pre-filled with the sentinel.
  Guarded(std::string_view name, size_t n) : name_(name), n_(n), output_(true) {
    static_assert(std::is_same_v<T, float>, "outputs are float");
    Allocate();
    std::fill(storage_.begin() + kMargin, storage_.begin() + kMargin + n_, std::bit_cast<float>(kSentinelFloatBits));
  }
  // Movable (the body keeps its address: spans handed out stay valid), not copyable.
  Guarded(Guarded&& other) noexcept
      : name_(other.name_), n_(other.n_), output_(other.output_), snapshot_(other.snapshot_),
        storage_(std::move(other.storage_)) {
    other.storage_ = {};
  }
  Guarded& operator=(Guarded&&) = delete;
  ~Guarded() {
    if (storage_.capacity() > 0) StoragePool<T>().push_back(std::move(storage_));
  }

  bool output() const { return output_; }
  std::span<T> body() { return {storage_.data() + kMargin, n_}; }
  std::span<const T> cbody() const { return {storage_.data() + kMargin, n_}; }

  // Input checks: margins intact and body unchanged.
  void CheckInput(std::vector<std::string>& faults) const {
    const auto [before, after] = MarginDamage();
    if (before + after > 0) {
      faults.push_back(fmt::format("adapter wrote outside input {} ({})", name_, MarginText(before, after)));
    }
    if (n_ > 0 && std::memcmp(storage_.data() + kMargin, snapshot_.data(), n_ * sizeof(T)) != 0) {
      faults.push_back(fmt::format("adapter modified input {}", name_));
    }
  }
  // Output checks: margins intact and (unless the adapter threw) every element written.
  void CheckOutput(std::vector<std::string>& faults, bool threw) const {
    const auto [before, after] = MarginDamage();
    if (before + after > 0) {
      faults.push_back(fmt::format("adapter wrote outside its output ({})", MarginText(before, after)));
    }
    if (threw) return;
    size_t unwritten = 0, i = 0;
    const float* body = storage_.data() + kMargin;
    constexpr size_t kBlock = 64;  // a fixed-length count the compiler vectorizes
    uint32_t bits[kBlock];
    for (; i + kBlock <= n_; i += kBlock) {
      std::memcpy(bits, body + i, sizeof(bits));
      uint32_t hits = 0;
      for (size_t l = 0; l < kBlock; ++l) hits += bits[l] == kSentinelFloatBits ? 1 : 0;
      unwritten += hits;
    }
    for (; i < n_; ++i) unwritten += std::bit_cast<uint32_t>(body[i]) == kSentinelFloatBits;
    if (unwritten > 0) faults.push_back(fmt::format("adapter left {} output elements unwritten", unwritten));
  }

 private:
  void Allocate() {
    std::vector<std::vector<T>>& pool = StoragePool<T>();
    if (!pool.empty()) {
      storage_ = std::move(pool.back());
      pool.pop_back();
    }
    storage_.resize(n_ + 2 * kMargin);
    const T guard = GuardValue<T>();
    std::fill(storage_.begin(), storage_.begin() + kMargin, guard);
    std::fill(storage_.begin() + kMargin + n_, storage_.end(), guard);
  }
  // A whole margin of guard values (bitwise), for one memcmp per intact margin.
  static const T* GuardBlock() {
    static const std::vector<T> block(kMargin, GuardValue<T>());
    return block.data();
  }
  std::pair<size_t, size_t> MarginDamage() const {
    const T guard = GuardValue<T>();
    if (std::memcmp(storage_.data(), GuardBlock(), kMargin * sizeof(T)) == 0 &&
        std::memcmp(storage_.data() + kMargin + n_, GuardBlock(), kMargin * sizeof(T)) == 0) {
      return {0, 0};
    }
    size_t before = 0, after = 0;
    for (size_t i = 0; i < kMargin; ++i) {
      before += std::memcmp(&storage_[i], &guard, sizeof(T)) != 0;
      after += std::memcmp(&storage_[kMargin + n_ + i], &guard, sizeof(T)) != 0;
    }
    return {before, after};
  }

  std::string_view name_;  // a string literal
  size_t n_ = 0;
  bool output_ = false;
  std::span<const T> snapshot_;
  std::vector<T> storage_;
};

}  // namespace attncheck::guarded
