// Small text helpers every layer uses: the FNV-1a 64 hash of a string (case
// hashes, law stream seeds) and the first line of a message (one-line cells).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace attncheck {

// FNV-1a 64 (offset basis 0xcbf29ce484222325, prime 0x100000001b3) over the bytes of `text`.
constexpr uint64_t Fnv1a64(std::string_view text) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (char ch : text) {
    hash ^= static_cast<unsigned char>(ch);
    hash *= 0x100000001b3ull;
  }
  return hash;
}

// The text up to its first newline.
inline std::string FirstLine(std::string_view text) { return std::string(text.substr(0, text.find('\n'))); }

}  // namespace attncheck
