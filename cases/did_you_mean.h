// "Did you mean …?" for an unknown name (a law, an adapter, a subcommand, an
// option): the closest known name by edit distance (insertions, deletions,
// substitutions and swaps of two adjacent characters each cost 1), offered only
// when near.
#pragma once

#include <algorithm>
#include <numeric>
#include <string>
#include <string_view>
#include <vector>

namespace attncheck {

// Optimal-string-alignment distance between `a` and `b`: Levenshtein plus the swap
// of two adjacent characters ("f61" → "f16" is one edit); three-row dynamic programme.
inline size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> before(b.size() + 1), previous(b.size() + 1), current(b.size() + 1);
  std::iota(previous.begin(), previous.end(), size_t{0});
  for (size_t i = 1; i <= a.size(); ++i) {
    current[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t substitute = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      current[j] = std::min({previous[j] + 1, current[j - 1] + 1, substitute});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        current[j] = std::min(current[j], before[j - 2] + 1);
      }
    }
    std::swap(before, previous);
    std::swap(previous, current);
  }
  return previous[b.size()];
}

// The known name closest to `name`, or "" when none is within max(2, |name| / 3)
// edits (the first of equally close names wins).
inline std::string ClosestName(std::string_view name, const std::vector<std::string>& known) {
  const size_t limit = std::max<size_t>(2, name.size() / 3);
  std::string best;
  size_t best_distance = limit + 1;
  for (const std::string& candidate : known) {
    const size_t distance = EditDistance(name, candidate);
    if (distance < best_distance) {
      best = candidate;
      best_distance = distance;
    }
  }
  return best;
}

// "unknown law 'x'; did you mean 'y'? (attncheck list shows all)", without the
// suggestion when nothing is close; `what` is "law", "adapter", … and `where`
// the command that lists every name.
inline std::string UnknownName(std::string_view what, std::string_view name, const std::vector<std::string>& known,
                               std::string_view where = "attncheck list") {
  const std::string closest = ClosestName(name, known);
  std::string text = "unknown " + std::string(what) + " '" + std::string(name) + "'";
  if (!closest.empty()) text += "; did you mean '" + closest + "'?";
  return text + " (" + std::string(where) + " shows all)";
}

}  // namespace attncheck
