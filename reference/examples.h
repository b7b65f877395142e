// Named example cases from the worked example on masks and positions (seed 000):
// causal 4×4, packed [A,B,EOS,D,E,EOS], left padding [PAD,PAD,A,B,C], prefix-LM,
// cached decode p_i = T_past + i. Tests and `attncheck show` use them by name.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "cases/case.h"

namespace attncheck::reference {

// causal4   T = 4 causal: lower-triangular 4×4
// packed6   one row, documents [3, 3], causal: block-diagonal 6×6, positions 0 1 2 0 1 2
// leftpad5  left_pad 2, documents [3]: position ids 0 0 0 1 2, pad keys invisible
// prefixlm  T = 6, prefix 3, prefix-LM: rows 0–2 see keys 0–2, rows 3–5 causal
// decode    T_past = 5, Tq = 2 (Tk = 7), causal: rows [1 1 1 1 1 1 0], [1 1 1 1 1 1 1]
std::optional<Case> ExampleCase(std::string_view name);
std::vector<std::string_view> ExampleNames();

}  // namespace attncheck::reference
