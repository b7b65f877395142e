// FdpSource: the Source of the libFuzzer targets (DESIGN §3). It reads the
// fuzzer's bytes from the front, in the spirit of LLVM's FuzzedDataProvider but
// small, our own and exactly invertible (fuzz/seed_encoding.h writes bytes it
// reads back): Int(lo, hi) takes the fewest bytes that cover hi − lo,
// little-endian, and reduces them modulo the span; Bool takes one byte's low bit.
// Out of bytes every draw returns its minimum (lo, false), so the empty input
// decodes to the smallest case, and a draw with hi <= lo consumes nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "cases/source.h"

namespace attncheck {

// Bytes an Int(lo, hi) draw reads: 0 when hi <= lo, else the fewest whole
// bytes whose range covers hi − lo (1 for a span below 256, …, 8 for 2^56 and up).
constexpr int FdpIntWidth(int64_t lo, int64_t hi) {
  if (hi <= lo) return 0;
  uint64_t span = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo);
  int width = 0;
  while (span != 0) {
    ++width;
    span >>= 8;
  }
  return width;
}

class FdpSource {
 public:
  FdpSource(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  explicit FdpSource(std::span<const uint8_t> bytes) : FdpSource(bytes.data(), bytes.size()) {}

  // lo + (next FdpIntWidth bytes, little-endian) mod (hi − lo + 1); the bytes
  // missing at the end count as zero, so an exhausted source gives lo.
  int64_t Int(int64_t lo, int64_t hi, std::string_view /*name*/) {
    const int width = FdpIntWidth(lo, hi);
    if (width == 0) return lo;
    uint64_t bits = 0;
    for (int i = 0; i < width && position_ < size_; ++i) {
      bits |= static_cast<uint64_t>(data_[position_++]) << (8 * i);
    }
    const uint64_t span = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo);
    const uint64_t offset = span == UINT64_MAX ? bits : bits % (span + 1);
    return static_cast<int64_t>(static_cast<uint64_t>(lo) + offset);
  }

  // The low bit of the next byte; false when exhausted.
  bool Bool(std::string_view /*name*/) {
    if (position_ >= size_) return false;
    return (data_[position_++] & 1u) != 0;
  }

  size_t consumed() const { return position_; }
  size_t remaining() const { return size_ - position_; }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t position_ = 0;
};

static_assert(Source<FdpSource>);

}  // namespace attncheck
