// The role table and a verdict's signature (see signature.h).
#include "properties/signature.h"

#include <array>
#include <stdexcept>

#include <fmt/format.h>

#include "properties/verdict.h"

namespace attncheck {
namespace {

constexpr std::array kRoles = {
    RoleInfo{Role::kNone, "none", "no failure", false},
    RoleInfo{Role::kLeak, "leak", "a blocked key read by a row that has visible keys", true},
    RoleInfo{Role::kEmptyRowRead, "empty-row-read", "a key read by a row with no visible key", true},
    RoleInfo{Role::kPoison, "poison", "NaN or a huge value from a slot no query may read reached an output", true},
    RoleInfo{Role::kPolicy, "policy", "a row with no visible key broke the declared policy without reading a key",
             true},
    RoleInfo{Role::kNumeric, "numeric", "a value off beyond its bound: the mask held, the numbers did not", false},
    RoleInfo{Role::kHistory, "history", "the same call answered differently before and after other calls", false},
    RoleInfo{Role::kFault, "fault", "the adapter crashed, hung, threw, answered garbage or broke a buffer", false},
};

constexpr bool RolesInEnumOrder() {
  for (size_t i = 0; i < kRoles.size(); ++i)
    if (kRoles[i].role != static_cast<Role>(i)) return false;
  return true;
}
static_assert(RolesInEnumOrder(), "kRoles is indexed by Role");

}  // namespace

std::span<const RoleInfo> AllRoles() { return kRoles; }
const RoleInfo& Info(Role role) { return kRoles[static_cast<size_t>(role)]; }
std::string_view Name(Role role) { return Info(role).name; }

Role RoleFromName(std::string_view name) {
  for (const RoleInfo& info : kRoles)
    if (info.name == name) return info.role;
  throw std::invalid_argument("unknown role '" + std::string(name) + "'");
}

std::string_view MaskForm(MaskConvention m) {
  if (IsBool(m)) return "bool";
  if (IsCausalFlag(m)) return "causal flag";
  if (m == MaskConvention::kDescriptor) return "descriptor";
  return m == MaskConvention::kAdditiveNegInf ? "additive -inf" : "additive finite";
}

std::string Signature::Key() const { return fmt::format("{} | {} | {} | {}", law, step, Name(role), mask_form); }

Signature SignatureOf(std::string_view law, const Case& c, const Verdict& v) {
  Signature s;
  s.law = std::string(law);
  s.step = v.step.empty() ? (IsAdapterError(v.outcome) ? std::string(Name(v.fault)) : "check") : v.step;
  s.role = v.role != Role::kNone ? v.role : IsAdapterError(v.outcome) ? Role::kFault : Role::kNumeric;
  s.mask_form = Info(s.role).involves_mask ? std::string(MaskForm(v.mask ? *v.mask : c.mask)) : "any";
  return s;
}

}  // namespace attncheck
