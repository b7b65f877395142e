// SteeredSource: a Source that forces a few named draws into a range and hands
// every other draw through (cases/features.h steers the CLI campaigns toward pairs
// of declared features). Every draw still consumes the inner source exactly as an
// unsteered one would, so draw n of a case reads the same inner bits whether it
// was forced or not, and nothing forced gives the inner source's case.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cases/source.h"

namespace attncheck {

// One forced draw: the draw labelled `name` is kept in [lo, hi] (intersected with
// the draw's own range; left as drawn when they do not meet). With `if_draw` set it
// applies only when the case's earlier draw of that label returned `if_value`
// (a table index that depends on the mask drawn first, as "encoding.kind" does).
struct ForcedDraw {
  std::string name;
  int64_t lo = 0, hi = 0;
  std::string if_draw = {};
  int64_t if_value = 0;
  bool operator==(const ForcedDraw&) const = default;
};

template <Source S>
class SteeredSource {
 public:
  SteeredSource(S& inner, std::span<const ForcedDraw> forced) : inner_(inner), forced_(forced) {}

  int64_t Int(int64_t lo, int64_t hi, std::string_view name) { return Steer(inner_.Int(lo, hi, name), lo, hi, name); }

  bool Bool(std::string_view name) { return Steer(inner_.Bool(name) ? 1 : 0, 0, 1, name) != 0; }

 private:
  // `drawn` moved into the forced range: kept when inside, else wrapped into it
  // from its offset in [lo, hi], so the forced draw still varies with the inner one.
  int64_t Steer(int64_t drawn, int64_t lo, int64_t hi, std::string_view name) {
    int64_t value = drawn;
    for (const ForcedDraw& f : forced_) {
      if (f.name != name || !Applies(f)) continue;
      const int64_t a = std::max(lo, f.lo), b = std::min(hi, f.hi);
      if (a <= b && (drawn < a || drawn > b)) value = a + (drawn - lo) % (b - a + 1);
      break;
    }
    for (const ForcedDraw& f : forced_) {
      if (f.if_draw == name) {
        remembered_.emplace_back(std::string(name), value);
        break;
      }
    }
    return value;
  }

  bool Applies(const ForcedDraw& f) const {
    if (f.if_draw.empty()) return true;
    for (auto it = remembered_.rbegin(); it != remembered_.rend(); ++it) {
      if (it->first == f.if_draw) return it->second == f.if_value;
    }
    return false;
  }

  S& inner_;
  std::span<const ForcedDraw> forced_;
  std::vector<std::pair<std::string, int64_t>> remembered_;  // the draws some forced draw depends on
};

}  // namespace attncheck
