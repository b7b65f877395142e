// RapidCheck suites: one property per law × in-tree correct adapter (STYLE.md,
// "A property is short and named after its law"). Each draws a case with the one
// Decode inside the adapter's capabilities and asserts the law holds; a skip is
// classified, never counted as a pass of the law. ctest runs them with a bounded
// number of cases (RC_PARAMS max_success, `make test RC_CASES=N` for longer runs).
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "adapters/registry.h"
#include "cases/decode.h"
#include "cases/rc_source.h"
#include "properties/laws.h"

namespace attncheck {
namespace {

// The law whose table row names `suite`.
const Law& LawOfSuite(std::string_view suite) {
  for (const Law& law : AllLaws())
    if (law.suite == suite) return law;
  throw std::invalid_argument("no law has the suite " + std::string(suite));
}

void HoldsOn(std::string_view suite, const char* adapter_name) {
  const Law& law = LawOfSuite(suite);
  const std::unique_ptr<Adapter> adapter = MakeAdapter(adapter_name);
  std::string why;
  const std::optional<Capabilities> caps = NarrowToNeeds(adapter->capabilities(), law.needs, &why);
  if (!caps) {  // nothing this adapter accepts meets the law's needs
    RC_TAG("nothing to draw: " + why);
    return;
  }
  RcSource source;
  const Case c = Decode(source, *caps, law.needs);
  RC_TAG(std::string(Name(c.visibility)));
  const Verdict v = RunLaw(law, *adapter, c, Options{});
  RC_CLASSIFY(v.skipped(), "skipped");
  if (IsFinding(v.outcome)) {
    RC_FAIL(std::string(law.name) + " on " + adapter_name + ": " + v.message + "\n  " + ToLine(c));
  }
}

// One suite per row of the law table (Law::suite), each law on every in-tree adapter.
#define ATTNCHECK_LAW_SUITE(Suite)                                           \
  RC_GTEST_PROP(Suite, Reference, ()) { HoldsOn(#Suite, "reference"); }      \
  RC_GTEST_PROP(Suite, Eigen, ()) { HoldsOn(#Suite, "eigen"); }              \
  RC_GTEST_PROP(Suite, TiledF32, ()) { HoldsOn(#Suite, "tiled-f32"); }       \
  RC_GTEST_PROP(Suite, TiledF16, ()) { HoldsOn(#Suite, "tiled-f16"); }       \
  RC_GTEST_PROP(Suite, TiledBf16, ()) { HoldsOn(#Suite, "tiled-bf16"); }

ATTNCHECK_LAW_SUITE(NonInterference)
ATTNCHECK_LAW_SUITE(LeftPadding)
ATTNCHECK_LAW_SUITE(PackedIsolation)
ATTNCHECK_LAW_SUITE(RopeRelative)
ATTNCHECK_LAW_SUITE(DecodeConsistency)
ATTNCHECK_LAW_SUITE(MaskedRows)
ATTNCHECK_LAW_SUITE(ReferenceAgreement)
ATTNCHECK_LAW_SUITE(MaskConventions)
ATTNCHECK_LAW_SUITE(Gqa)
ATTNCHECK_LAW_SUITE(BackwardAgreement)
ATTNCHECK_LAW_SUITE(BackwardNonInterference)
ATTNCHECK_LAW_SUITE(BackwardMaskedRows)
ATTNCHECK_LAW_SUITE(BackwardGqa)
ATTNCHECK_LAW_SUITE(BackwardPackedIsolation)
ATTNCHECK_LAW_SUITE(BackwardSelfConsistency)

// Every law of the table has its suite above.
TEST(LawSuites, EveryLawHasItsSuite) {
  const testing::UnitTest& unit = *testing::UnitTest::GetInstance();
  for (const Law& law : AllLaws()) {
    bool found = false;
    for (int i = 0; i < unit.total_test_suite_count() && !found; ++i) found = unit.GetTestSuite(i)->name() == law.suite;
    EXPECT_TRUE(found) << law.name << ": add ATTNCHECK_LAW_SUITE(" << law.suite << ")";
  }
}

}  // namespace
}  // namespace attncheck
