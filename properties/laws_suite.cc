// RapidCheck suites: one property per law × in-tree correct adapter (STYLE.md,
// "A property is short and named after its law"). Each draws a case with the one
// Decode inside the adapter's capabilities and asserts the law holds; a skip is
// classified, never counted as a pass of the law. ctest runs them with a bounded
// number of cases (RC_PARAMS max_success, `make test RC_CASES=N` for longer runs).
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "adapters/registry.h"
#include "cases/decode.h"
#include "cases/rc_source.h"
#include "properties/laws.h"

namespace attncheck {
namespace {

void HoldsOn(const char* law_name, const char* adapter_name) {
  const Law* law = FindLaw(law_name);
  RC_ASSERT(law != nullptr);
  const std::unique_ptr<Adapter> adapter = MakeAdapter(adapter_name);
  RcSource source;
  const Case c = Decode(source, adapter->capabilities());
  RC_TAG(std::string(Name(c.visibility)));
  const Verdict v = law->check(*adapter, c, Options{});
  RC_CLASSIFY(v.skipped(), "skipped");
  if (v.failed() || v.outcome == Outcome::kError) {
    RC_FAIL(std::string(law_name) + " on " + adapter_name + ": " + v.message + "\n  " + ToLine(c));
  }
}

#define ATTNCHECK_LAW_SUITE(Suite, law)                                     \
  RC_GTEST_PROP(Suite, Reference, ()) { HoldsOn(law, "reference"); }        \
  RC_GTEST_PROP(Suite, Eigen, ()) { HoldsOn(law, "eigen"); }                \
  RC_GTEST_PROP(Suite, TiledF32, ()) { HoldsOn(law, "tiled-f32"); }         \
  RC_GTEST_PROP(Suite, TiledF16, ()) { HoldsOn(law, "tiled-f16"); }         \
  RC_GTEST_PROP(Suite, TiledBf16, ()) { HoldsOn(law, "tiled-bf16"); }

ATTNCHECK_LAW_SUITE(NonInterference, "non-interference")
ATTNCHECK_LAW_SUITE(LeftPadding, "left-padding")
ATTNCHECK_LAW_SUITE(PackedIsolation, "packed-isolation")
ATTNCHECK_LAW_SUITE(RopeRelative, "rope-relative")
ATTNCHECK_LAW_SUITE(DecodeConsistency, "decode-consistency")
ATTNCHECK_LAW_SUITE(MaskedRows, "masked-rows")
ATTNCHECK_LAW_SUITE(ReferenceAgreement, "reference-agreement")
ATTNCHECK_LAW_SUITE(MaskConventions, "mask-conventions")
ATTNCHECK_LAW_SUITE(Gqa, "gqa")

}  // namespace
}  // namespace attncheck
