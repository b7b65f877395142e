// The adapter kinds' table (adapters/registrar.h).
#include "adapters/registrar.h"

#include <array>

namespace attncheck {
namespace {

struct KindRow {
  AdapterKind kind;
  std::string_view name;
  bool default_gate;
  bool leading_wildcard;
};

constexpr std::array kKinds = {
    KindRow{AdapterKind::kCorrect, "correct", true, true},
    KindRow{AdapterKind::kLibrary, "library", false, true},
    KindRow{AdapterKind::kDefective, "mutant", false, false},
    KindRow{AdapterKind::kScheme, "scheme", false, false},
};

constexpr bool InEnumOrder() {
  for (size_t i = 0; i < kKinds.size(); ++i)
    if (static_cast<size_t>(kKinds[i].kind) != i) return false;
  return true;
}
static_assert(InEnumOrder(), "kKinds rows follow AdapterKind's order");

const KindRow& Row(AdapterKind kind) { return kKinds[static_cast<size_t>(kind)]; }

}  // namespace

std::string_view Name(AdapterKind kind) { return Row(kind).name; }
bool InDefaultGate(AdapterKind kind) { return Row(kind).default_gate; }
bool PickedByLeadingWildcard(AdapterKind kind) { return Row(kind).leading_wildcard; }

}  // namespace attncheck
