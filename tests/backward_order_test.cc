// Capabilities::backward_deterministic: a backward that adds dQ's key tiles in a
// run-dependent order (as GPU backwards with atomics do) passes the backward laws that
// compare two runs once it declares so, fails them where it declares determinism, and
// a real leak into dq still fails beyond the summation order's bound.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <string_view>

#include "adapters/registry.h"
#include "properties/laws.h"
#include "tests/law_stream.h"

namespace attncheck {
namespace {

using test::HaveNumpy;
using test::RunStream;
using test::Tally;

Tally Stream(Adapter& adapter, const char* law, int cases) { return RunStream(adapter, *FindLaw(law), cases, 3); }

const std::string kBackend =
    "exec:/usr/bin/python3 " ATTNCHECK_SOURCE_DIR "/tests/data/process/atomic_backward_backend.py";

TEST(BackwardOrder, RunDependentOrderDeclaredPasses) {
  if (!HaveNumpy()) GTEST_SKIP() << "/usr/bin/python3 cannot import numpy (Debian: apt-get install python3-numpy)";
  const std::unique_ptr<Adapter> adapter = MakeAdapter(kBackend);
  ASSERT_FALSE(adapter->capabilities().backward_deterministic);
  for (const char* law : {"backward-non-interference", "backward-packed-isolation"}) {
    const Tally t = Stream(*adapter, law, 60);
    EXPECT_EQ(t.failed, 0) << law << ": " << t.first_failure;
    EXPECT_EQ(t.errors, 0) << law;
    EXPECT_GT(t.passed, 30) << law;
  }
}

// The same kernel declaring determinism: its run-to-run bits are a broken promise.
TEST(BackwardOrder, RunDependentOrderUndeclaredFails) {
  if (!HaveNumpy()) GTEST_SKIP() << "/usr/bin/python3 cannot import numpy (Debian: apt-get install python3-numpy)";
  const std::unique_ptr<Adapter> adapter = MakeAdapter(kBackend + " --declare-deterministic");
  ASSERT_TRUE(adapter->capabilities().backward_deterministic);
  const Tally t = Stream(*adapter, "backward-non-interference", 60);
  EXPECT_GT(t.failed, 0);
}

// Declared run-dependent, a dq that reads one blocked key more still fails: by far more
// than the order's bound where two runs are compared (the message states both), and
// against the call alone in packed-isolation's (1).
TEST(BackwardOrder, LeakBeyondTheOrderBoundFails) {
  if (!HaveNumpy()) GTEST_SKIP() << "/usr/bin/python3 cannot import numpy (Debian: apt-get install python3-numpy)";
  const std::unique_ptr<Adapter> adapter = MakeAdapter(kBackend + " --defect-dq-one-key-more");
  for (const char* law : {"backward-non-interference", "backward-packed-isolation"}) {
    const Tally t = Stream(*adapter, law, 30);
    EXPECT_GT(t.failed, 10) << law;
    // non-interference's (b) compares two runs under the order's bound, and says so
    if (law == std::string_view("backward-non-interference")) {
      EXPECT_NE(t.first_failure.find("summation orders may differ by"), std::string::npos) << t.first_failure;
    }
  }
}

}  // namespace
}  // namespace attncheck
