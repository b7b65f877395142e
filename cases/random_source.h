// RandomSource: the Source of CLI campaigns (DESIGN §3). Counter-based: draw n of
// case i under seed s is SplitMix64(key(s, i) + n·γ), so case i of seed s is the
// same on every machine, compiler and shard, whatever other cases were drawn.
#pragma once

#include <cstdint>
#include <string_view>

#include "cases/source.h"
#include "cases/text.h"

namespace attncheck {

// SplitMix64 finaliser (Steele, Lea, Flood 2014; the mixer of java.util.SplittableRandom).
constexpr uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// The seed of a law's case stream: seed ^ FNV-1a-64(law name), so laws do not
// share cases and a law's stream does not depend on which other laws run.
constexpr uint64_t LawStreamSeed(uint64_t seed, std::string_view law) { return seed ^ Fnv1a64(law); }

class RandomSource {
 public:
  RandomSource(uint64_t seed, uint64_t case_index)
      : key_(SplitMix64(SplitMix64(seed) ^ (case_index * 0xd1b54a32d192ed03ull + 0x8bb84b93962eacc9ull))) {}

  // Uniform in [lo, hi] (multiply-shift of a 64-bit draw: bias < 2^-40 for spans
  // below 2^24). lo when hi <= lo, without consuming a draw.
  int64_t Int(int64_t lo, int64_t hi, std::string_view /*name*/) {
    if (hi <= lo) return lo;
    const uint64_t span = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo) + 1;  // 0 = full range
    const uint64_t bits = Next();
    const uint64_t offset =
        span == 0 ? bits : static_cast<uint64_t>((static_cast<unsigned __int128>(bits) * span) >> 64);
    return static_cast<int64_t>(static_cast<uint64_t>(lo) + offset);
  }

  bool Bool(std::string_view /*name*/) { return (Next() >> 63) != 0; }

  uint64_t draws() const { return counter_; }

 private:
  uint64_t Next() { return SplitMix64(key_ + (counter_++) * 0x9e3779b97f4a7c15ull); }

  uint64_t key_;
  uint64_t counter_ = 0;
};

static_assert(Source<RandomSource>);

}  // namespace attncheck
