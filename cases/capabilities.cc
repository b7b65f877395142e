// Names of the capability enums (DESIGN §5).
#include "cases/capabilities.h"

namespace attncheck {

std::string_view Name(MaskedRowPolicy policy) {
  switch (policy) {
    case MaskedRowPolicy::kZeros: return "zeros";
    case MaskedRowPolicy::kNaN: return "nan";
    case MaskedRowPolicy::kUnspecified: return "unspecified";
    case MaskedRowPolicy::kMeanV: return "mean-v";
  }
  return "?";
}

std::optional<MaskedRowPolicy> MaskedRowPolicyFromName(std::string_view name) {
  for (MaskedRowPolicy p : {MaskedRowPolicy::kZeros, MaskedRowPolicy::kNaN, MaskedRowPolicy::kUnspecified,
                            MaskedRowPolicy::kMeanV})
    if (Name(p) == name) return p;
  return std::nullopt;
}

std::string_view Name(Blocking blocking) {
  switch (blocking) {
    case Blocking::kFill: return "fill";
    case Blocking::kNegInfOnly: return "neg-inf";
    case Blocking::kFillRows: return "fill-rows";
  }
  return "?";
}

std::optional<Blocking> BlockingFromName(std::string_view name) {
  for (Blocking b : {Blocking::kFill, Blocking::kNegInfOnly, Blocking::kFillRows})
    if (Name(b) == name) return b;
  return std::nullopt;
}

}  // namespace attncheck
