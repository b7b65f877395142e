// Capabilities::session_rope_as_call: a session that rotates each token as one attention
// call does (the kit's kv_cache_session) is compared with the prefill without the
// kernel's RoPE angle error, which is the same on both sides; a session on another float
// path that declares so fails; one that does not declare it is charged the angle error at
// its absolute positions and passes.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>

#include "adapters/registry.h"
#include "properties/laws.h"
#include "tests/law_stream.h"

namespace attncheck {
namespace {

using test::HaveNumpy;
using test::RunStream;
using test::Tally;

const std::string kBackend =
    "exec:/usr/bin/python3 " ATTNCHECK_SOURCE_DIR "/tests/data/process/session_rope_backend.py";
constexpr int kCases = 300;

Tally Decode(const std::string& flags) {
  const std::unique_ptr<Adapter> adapter = MakeAdapter(kBackend + flags);
  return RunStream(*adapter, *FindLaw("decode-consistency"), kCases, 3);
}

int Checked(const Tally& t) { return t.passed + t.failed + t.hazards; }

// kv_cache_session declares it; the same kernel undeclared skips more, as uninformative.
TEST(SessionRope, KvCacheSessionDeclaresItAndChecksMore) {
  if (!HaveNumpy()) GTEST_SKIP() << "/usr/bin/python3 cannot import numpy (Debian: apt-get install python3-numpy)";
  ASSERT_TRUE(MakeAdapter(kBackend)->capabilities().session_rope_as_call);
  ASSERT_FALSE(MakeAdapter(kBackend + " --undeclared")->capabilities().session_rope_as_call);
  const Tally declared = Decode(""), undeclared = Decode(" --undeclared");
  std::printf("decode-consistency, %d cases: declared %d passed / %d skipped, undeclared %d / %d\n", kCases,
              declared.passed, declared.skipped, undeclared.passed, undeclared.skipped);
  EXPECT_EQ(declared.failed, 0) << declared.first_failure;
  EXPECT_EQ(undeclared.failed, 0) << undeclared.first_failure;
  EXPECT_GT(Checked(declared), Checked(undeclared));
  EXPECT_GE(Checked(declared), kCases * 95 / 100);
}

// Keys rotated once, as appended, with float64 angles: as accurate as the call's float32
// ones, but not the same. Declared as the call's, the difference is a broken promise.
TEST(SessionRope, AnotherFloatPathDeclaredFails) {
  if (!HaveNumpy()) GTEST_SKIP() << "/usr/bin/python3 cannot import numpy (Debian: apt-get install python3-numpy)";
  const Tally t = Decode(" --session-angles-f64");
  EXPECT_GT(t.failed, 5);
  EXPECT_NE(t.first_failure.find("through the session"), std::string::npos) << t.first_failure;
}

// Not declared, the same session is charged each side's angle error: no false alarm.
TEST(SessionRope, AnotherFloatPathUndeclaredPasses) {
  if (!HaveNumpy()) GTEST_SKIP() << "/usr/bin/python3 cannot import numpy (Debian: apt-get install python3-numpy)";
  const Tally t = Decode(" --session-angles-f64 --undeclared");
  EXPECT_EQ(t.failed, 0) << t.first_failure;
  EXPECT_GT(t.passed, kCases / 2);
}

}  // namespace
}  // namespace attncheck
