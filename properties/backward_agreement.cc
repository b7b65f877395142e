// backward-agreement (DESIGN §6, the backward pass): dq, dk and dv of the kernel's
// backward call agree with the double reference backward (reference/backward.h)
// within the tolerance model of each named tensor (properties/tolerance.h), under a
// random upstream gradient (never all ones). dq is compared on the real rows that
// see a key; rows with no visible key get no upstream gradient here (their policy is
// backward-masked-rows'), and dk, dv are compared on every key slot.
#include "properties/backward_support.h"
#include "properties/law_run.h"
#include "properties/law_support.h"

namespace attncheck {

Verdict check_backward_agreement(Adapter& adapter, const Case& c, const Options& options) {
  LawRun law(check_backward_agreement, adapter);
  if (!law.Open(c)) return law.stop();
  const reference::Scenario& s = law.scenario();
  Oracle oracle(s, options, law.upstream());
  Verdict v = CheckGradients(oracle, law.base(), RealNonEmptyRows(s), "backward against the reference");
  if (v.failed()) v.expected_visibility = s.visible;
  return v;
}

}  // namespace attncheck
