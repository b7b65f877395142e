#include "properties/laws.h"

#include <array>

namespace attncheck {

namespace {
constexpr std::array kLaws = {
    Law{"non-interference", "perturbing keys a query cannot see leaves its output bitwise unchanged",
        check_non_interference},
    Law{"left-padding", "extra left/right pads with cumsum position ids leave real rows unchanged",
        check_left_padding},
    Law{"packed-isolation", "a packed document equals the document alone; other documents never reach it",
        check_packed_isolation},
    Law{"rope-relative", "RoPE matches R(p)x in the stated layout; q·k depends only on n − m; norms kept",
        check_rope_relative},
    Law{"decode-consistency", "prefill then chunked cached decode equals one prefill; no state across calls",
        check_decode_consistency},
    Law{"masked-rows", "rows with no visible key follow the declared policy; poisoned masked K/V never leak",
        check_masked_rows},
    Law{"reference-agreement", "attention output within k·|naive − oracle| + floor of the double oracle",
        check_reference_agreement},
    Law{"mask-conventions", "every accepted mask convention gives the same output", check_mask_conventions},
    Law{"gqa", "grouped-query attention equals MHA with kv heads repeated (kv = h / group)", check_gqa},
};
}  // namespace

std::span<const Law> AllLaws() { return kLaws; }

const Law* FindLaw(std::string_view name) {
  for (const Law& law : kLaws)
    if (law.name == name) return &law;
  return nullptr;
}

}  // namespace attncheck
