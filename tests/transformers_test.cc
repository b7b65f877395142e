// The Hugging Face transformers 5.24 adapters (adapters/transformers) through the program:
// listed as unavailable with the reason without a Python that has transformers 5.24, listed
// and made when there is one, a short gate of the builders failing only with the causes
// FINDINGS.md classifies, and a one-key-wider sliding window planted in the backend failing.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "adapters/transformers/transformers_adapters.h"
#include "tests/cli_support.h"
#include "tests/library_gate.h"
#include "tests/windowed_case.h"

namespace attncheck {
namespace {

using test::CliRun;

// The (law, adapter) pairs with failures FINDINGS.md classifies (section "Hugging Face
// transformers 5.24.0").
// F30: a sliding window (or chunk) of 1 with a DynamicCache keeps every key, and the mask of the
// window is broadcast over them (one query) or clashes with them (more: an error).
const test::KnownFails kKnownFails = {
    {"non-interference", "hf-sdpa-sliding-f32"}, {"masked-rows", "hf-sdpa-sliding-f32"},
    {"reference-agreement", "hf-sdpa-sliding-f32"}, {"non-interference", "hf-sdpa-chunked-f32"},
    {"masked-rows", "hf-sdpa-chunked-f32"}, {"reference-agreement", "hf-sdpa-chunked-f32"}};
// F30's clash, and F31 (rope_type "dynamic" with 2 rotated dims raises ZeroDivisionError when the
// rotary embedding is built).
const test::KnownFails kKnownErrors = {
    {"non-interference", "hf-sdpa-sliding-f32"}, {"masked-rows", "hf-sdpa-sliding-f32"},
    {"reference-agreement", "hf-sdpa-sliding-f32"}, {"non-interference", "hf-sdpa-chunked-f32"},
    {"masked-rows", "hf-sdpa-chunked-f32"}, {"reference-agreement", "hf-sdpa-chunked-f32"},
    {"rope-relative", "hf-rope-f32"}, {"reference-agreement", "hf-rope-f32"}};

class TransformersTest : public test::ScratchDirTest {
 protected:
  void SetUp() override {
    test::ScratchDirTest::SetUp();
    missing_ = FindPythonBackend(kTransformersLibrary).missing;
  }
  std::string missing_;
};

// Without the Python (ATTNCHECK_TRANSFORMERS_PYTHON names none) every hf-* adapter is listed
// as unavailable with the reason, naming one is a usage error, and `hf-*` too.
TEST_F(TransformersTest, UnavailableWithoutPython) {
  test::ExpectUnavailable(dir_, "ATTNCHECK_TRANSFORMERS_PYTHON=/nonexistent",
                          test::OtherPythonLibrariesUnavailable(kTransformersLibrary), kTransformersAdapters,
                          "no Python at /nonexistent (scripts/install-deps.sh --with-python)", "hf-*");
}

// A Python without transformers (the system python3) lists them as unavailable, naming it.
TEST_F(TransformersTest, UnavailableWithoutTransformers) {
  const std::string python = "/usr/bin/python3";  // Debian's: dist-packages, no site-packages with transformers
  if (access(python.c_str(), X_OK) != 0) GTEST_SKIP() << "no " << python;
  test::ExpectUnavailable(dir_, "ATTNCHECK_TRANSFORMERS_PYTHON=" + python,
                          test::OtherPythonLibrariesUnavailable(kTransformersLibrary), kTransformersAdapters,
                          "transformers is not installed for " + python + " (scripts/install-deps.sh --with-python)",
                          "hf-*");
}

// Installed: an adapter answers `list --adapter` with the versions its backend reports and
// the size tier it declares; the rope variant declares its rope stage.
TEST_F(TransformersTest, ListedAndMadeWhenInstalled) {
  if (!missing_.empty()) GTEST_SKIP() << "hf-* adapters unavailable: " << missing_;
  for (const PythonAdapterName& known : kTransformersAdapters) {
    const CliRun run = Run("list --json --adapter " + std::string(known.name));
    ASSERT_EQ(run.code, 0) << run.err;
    const nlohmann::json j = nlohmann::json::parse(run.out);
    EXPECT_EQ(j.at("name"), known.name);
    EXPECT_NE(j.at("description").get<std::string>().find("transformers 5.24."), std::string::npos) << j.dump();
    EXPECT_EQ(j.at("capabilities").at("size_tier").at("percent"), 10) << j.dump();
    EXPECT_EQ(j.at("capabilities").at("has_rope_stage"), std::string(known.name) == "hf-rope-f32") << j.dump();
  }
}

// A short gate of each builder in f32 (the bf16 and eager variants build the same masks);
// the larger gates are FINDINGS.md's.
TEST_F(TransformersTest, ShortGateFailsOnlyWithClassifiedCauses) {
  if (!missing_.empty()) GTEST_SKIP() << "hf-* adapters unavailable: " << missing_;
  for (const char* adapter : {"hf-sdpa-causal-f32", "hf-sdpa-sliding-f32", "hf-sdpa-chunked-f32", "hf-sdpa-packed-f32"}) {
    test::ExpectClassifiedShortGate(dir_, adapter, 5, kKnownFails, kKnownErrors);
  }
}

// The rope stage: rope-relative and reference-agreement on a few cases fail only with F31's error.
TEST_F(TransformersTest, RopeStageGate) {
  if (!missing_.empty()) GTEST_SKIP() << "hf-* adapters unavailable: " << missing_;
  const CliRun run = test::RunAttncheck(dir_, dir_,
                                        "gate --adapter hf-rope-f32 --cases 5 --law rope-relative"
                                        " --law reference-agreement --seed 3 --json gate.json");
  ASSERT_TRUE(run.code == 0 || run.code == 1 || run.code == 3) << run.code << "\n" << run.out << run.err;
  test::ExpectClassifiedSummary(dir_ / "gate.json", kKnownFails, kKnownErrors);  // errors: F31 only
}

// The backend with config.sliding_window one key larger than the descriptor's window
// (--defect-window-one-wider, one line of backend.py) fails non-interference on the windowed
// case (Tq 3 < Tk 9: the past goes through the sliding-window cache); without the flag it passes.
TEST_F(TransformersTest, PlantedWindowDefectFails) {
  if (!missing_.empty()) GTEST_SKIP() << "hf-* adapters unavailable: " << missing_;
  {
    std::ofstream(dir_ / "window.json") << test::kWindowedCase;
  }
  const std::string backend =
      "exec:" + PythonCommand(FindPythonBackend(kTransformersLibrary), kTransformersAdapters[3]);
  ASSERT_NE(backend.find("sdpa-sliding-f32"), std::string::npos) << backend;
  const std::string planted = backend + " --defect-window-one-wider";
  const std::string env = "ATTNCHECK_CALL_TIMEOUT=60";  // the exec: form has the plain 10 s limit
  const CliRun good = test::RunAttncheck(
      dir_, dir_, "replay window.json --law non-interference --adapter " + test::Quoted(backend), env);
  EXPECT_EQ(good.code, 0) << good.out << good.err;
  EXPECT_EQ(good.out.find("skip"), std::string::npos) << good.out;  // the window reached the builder
  const CliRun bad = test::RunAttncheck(
      dir_, dir_, "replay window.json --law non-interference --adapter " + test::Quoted(planted), env);
  EXPECT_EQ(bad.code, 1) << bad.out << bad.err;
}

}  // namespace
}  // namespace attncheck
