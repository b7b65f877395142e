// The ONNX Runtime 1.31 adapters from PyPI (ort131-*, adapters/onnxruntime/backend.py) through
// the program: listed as unavailable with the reason without a Python that has onnxruntime 1.31
// and onnx, listed and made when there is one, a short gate failing only with the causes
// FINDINGS.md classifies, and a one-line defect planted in the backend failing the gate.
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include <nlohmann/json.hpp>

#include "adapters/onnxruntime/ort_python_adapters.h"
#include "tests/cli_support.h"
#include "tests/library_gate.h"
#include "tests/windowed_case.h"

namespace attncheck {
namespace {

using test::CliRun;

// The (law, adapter) pairs with failures FINDINGS.md classifies (section "ONNX Runtime
// 1.31.1 (PyPI, CPU)"): F12 still holds on 1.31, f16 Attention (and the rotary variant, which
// runs the same kernel) behind bool and causal masks.
const test::KnownFails kKnownFails = {
    {"non-interference", "ort131-attention-f16"}, {"masked-rows", "ort131-attention-f16"},
    {"packed-isolation", "ort131-attention-f16"}, {"left-padding", "ort131-attention-f16"},
    {"decode-consistency", "ort131-attention-f16"}, {"reference-agreement", "ort131-attention-f16"},
    {"non-interference", "ort131-rotary-f16"},    {"masked-rows", "ort131-rotary-f16"},
    {"packed-isolation", "ort131-rotary-f16"},    {"left-padding", "ort131-rotary-f16"},
    {"decode-consistency", "ort131-rotary-f16"},  {"reference-agreement", "ort131-rotary-f16"}};

class OrtPythonTest : public test::ScratchDirTest {
 protected:
  void SetUp() override {
    test::ScratchDirTest::SetUp();
    missing_ = FindPythonBackend(kOrtPythonLibrary).missing;
  }
  std::string missing_;
};

TEST_F(OrtPythonTest, UnavailableWithoutPython) {
  test::ExpectUnavailable(dir_, "ATTNCHECK_ORT_PYTHON=/nonexistent",
                          test::OtherPythonLibrariesUnavailable(kOrtPythonLibrary), kOrtPythonAdapters,
                          "no Python at /nonexistent (scripts/install-deps.sh --with-python)", "ort131-*");
}

TEST_F(OrtPythonTest, UnavailableWithoutOnnxruntime) {
  const std::string python = "/usr/bin/python3";  // Debian's: dist-packages, no site-packages with onnxruntime
  if (access(python.c_str(), X_OK) != 0) GTEST_SKIP() << "no " << python;
  test::ExpectUnavailable(dir_, "ATTNCHECK_ORT_PYTHON=" + python,
                          test::OtherPythonLibrariesUnavailable(kOrtPythonLibrary), kOrtPythonAdapters,
                          "onnxruntime is not installed for " + python + " (scripts/install-deps.sh --with-python)",
                          "ort131-*");
}

TEST_F(OrtPythonTest, ListedAndMadeWhenInstalled) {
  if (!missing_.empty()) GTEST_SKIP() << "ort131-* adapters unavailable: " << missing_;
  for (const PythonAdapterName& known : kOrtPythonAdapters) {
    const CliRun run = Run("list --json --adapter " + std::string(known.name));
    ASSERT_EQ(run.code, 0) << run.err;
    const nlohmann::json j = nlohmann::json::parse(run.out);
    EXPECT_EQ(j.at("name"), known.name);
    EXPECT_NE(j.at("description").get<std::string>().find("onnxruntime 1.31."), std::string::npos) << j.dump();
    EXPECT_EQ(j.at("capabilities").at("size_tier").at("percent"), 25) << j.dump();
  }
}

// A short gate of each operator in f32 and of the f16 Attention kernel.
TEST_F(OrtPythonTest, ShortGateFailsOnlyWithClassifiedCauses) {
  if (!missing_.empty()) GTEST_SKIP() << "ort131-* adapters unavailable: " << missing_;
  for (const char* adapter : {"ort131-*-f32", "ort131-attention-f16"}) {
    test::ExpectClassifiedShortGate(dir_, adapter, 5, kKnownFails);
  }
}

// GroupQueryAttention's window from the descriptor: the windowed, right-padded GQA case passes
// non-interference; the backend with local_window_size one key wider
// (--defect-window-one-wider, one line of backend.py) fails it.
TEST_F(OrtPythonTest, PlantedWindowDefectFails) {
  if (!missing_.empty()) GTEST_SKIP() << "ort131-* adapters unavailable: " << missing_;
  const PythonAdapterName& gqa = kOrtPythonAdapters[3];
  ASSERT_EQ(gqa.name, "ort131-gqa-f32");
  test::ExpectPlantedDefectFails(dir_, test::kWindowedCase, "non-interference",
                                 "exec:" + PythonCommand(FindPythonBackend(kOrtPythonLibrary), gqa),
                                 "--defect-window-one-wider");
}

}  // namespace
}  // namespace attncheck
