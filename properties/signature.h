// A failure's signature (DESIGN §7; Hypothesis's InterestingOrigin): the law, the
// comparison step that failed, the role of the worst element and the mask form the
// kernel was handed. One bug is one signature: campaigns keep the smallest case per
// signature, gates group by it, and the shrinker keeps it while it shrinks.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "cases/case.h"

namespace attncheck {

struct Verdict;

// What the worst element of a failure is. One table (signature.cc): its name in
// files and its meaning in reports.
enum class Role {
  kNone,          // no failure
  kLeak,          // a key the reference blocks, read by a row that has a visible key
  kEmptyRowRead,  // a key read by a row that has no visible key at all (a leak too)
  kPoison,        // NaN or a huge value from a slot no query may read reached an output
  kPolicy,        // a row with no visible key broke the declared policy without reading a key
  kNumeric,       // a visible row's value is off (the mask held; the numbers did not)
  kHistory,       // the same call answered differently before and after other calls
  kFault,         // the adapter crashed, hung, threw, answered garbage or broke a buffer
};

struct RoleInfo {
  Role role;
  std::string_view name;     // "leak": signatures, JSON
  std::string_view meaning;  // one line for reports
  bool involves_mask;        // the mask decided it: the mask form is part of the signature
};

std::span<const RoleInfo> AllRoles();
const RoleInfo& Info(Role role);
std::string_view Name(Role role);
// Throws std::invalid_argument for a name not in the table.
Role RoleFromName(std::string_view name);

// The form of the visibility the kernel was handed: "additive -inf", "additive
// finite", "bool", "causal flag", "descriptor".
std::string_view MaskForm(MaskConvention m);

struct Signature {
  std::string law;
  std::string step;  // the comparison that failed ("real rows vs oracle")
  Role role = Role::kNone;
  std::string mask_form;  // MaskForm of the convention the law ran; "any" where the role involves no mask

  // "law | step | role | mask form": the identity campaigns and gates key on.
  std::string Key() const;
  bool operator==(const Signature&) const = default;
};

// The signature of `law`'s verdict on case c: the step and role the law set (a
// verdict without them: step "check", role numeric; an error verdict: role fault),
// and the mask form where the role involves the mask (a numeric error is one bug
// whichever mask carried the visibility).
Signature SignatureOf(std::string_view law, const Case& c, const Verdict& v);

}  // namespace attncheck
