// Names of the capability enums (DESIGN §5).
#include "cases/capabilities.h"

namespace attncheck {

std::string_view Name(MaskedRowPolicy policy) {
  switch (policy) {
    case MaskedRowPolicy::kZeros: return "zeros";
    case MaskedRowPolicy::kNaN: return "nan";
    case MaskedRowPolicy::kUnspecified: return "unspecified";
  }
  return "?";
}

}  // namespace attncheck
