// The JAX 0.10 adapters (adapters/jax) through the program: listed as unavailable with
// the reason without a Python that has jax and jaxlib 0.10, listed and made when there is
// one, a short gate of each kernel failing only with the causes FINDINGS.md classifies,
// and one-line defects planted in the backend (a window, mha's backward mask) failing.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "adapters/jax/jax_adapters.h"
#include "tests/cli_support.h"
#include "tests/library_gate.h"
#include "tests/windowed_case.h"

namespace attncheck {
namespace {

using test::CliRun;

// The (law, adapter) pairs with failures FINDINGS.md classifies (section "JAX 0.10 (CPU)").
const test::KnownFails kKnownFails = {};
// F20: jit-compiled dot_product_attention in bf16 throws for one query over one key.
const test::KnownFails kKnownErrors = {{"non-interference", "jax-dpa-xla-bf16"},
                                       {"masked-rows", "jax-dpa-xla-bf16"},
                                       {"reference-agreement", "jax-dpa-xla-bf16"}};

class JaxTest : public test::ScratchDirTest {
 protected:
  void SetUp() override {
    test::ScratchDirTest::SetUp();
    missing_ = FindPythonBackend(kJaxLibrary).missing;
  }
  std::string missing_;
};

// Without the Python (ATTNCHECK_JAX_PYTHON names none) every jax-* adapter is listed as
// unavailable with the reason, naming one is a usage error, and `*` leaves them out.
TEST_F(JaxTest, UnavailableWithoutPython) {
  test::ExpectUnavailable(dir_, "ATTNCHECK_JAX_PYTHON=/nonexistent",
                          test::OtherPythonLibrariesUnavailable(kJaxLibrary), kJaxAdapters,
                          "no Python at /nonexistent (scripts/install-deps.sh --with-python)", "jax-*");
}

// A Python without jax (the system python3, or a venv with torch alone) lists them as
// unavailable, naming the missing package.
TEST_F(JaxTest, UnavailableWithoutJax) {
  const std::string python = "/usr/bin/python3";  // Debian's: dist-packages, no site-packages with jax
  if (access(python.c_str(), X_OK) != 0) GTEST_SKIP() << "no " << python;
  test::ExpectUnavailable(dir_, "ATTNCHECK_JAX_PYTHON=" + python,
                          test::OtherPythonLibrariesUnavailable(kJaxLibrary), kJaxAdapters,
                          "jax is not installed for " + python + " (scripts/install-deps.sh --with-python)", "jax-*");
}

// Installed: an adapter answers `list --adapter` with the jax version its backend reports
// and the size tier it declares.
TEST_F(JaxTest, ListedAndMadeWhenInstalled) {
  if (!missing_.empty()) GTEST_SKIP() << "jax-* adapters unavailable: " << missing_;
  for (const PythonAdapterName& known : kJaxAdapters) {
    const CliRun run = Run("list --json --adapter " + std::string(known.name));
    ASSERT_EQ(run.code, 0) << run.err;
    const nlohmann::json j = nlohmann::json::parse(run.out);
    EXPECT_EQ(j.at("name"), known.name);
    EXPECT_NE(j.at("description").get<std::string>().find("jax 0.10."), std::string::npos) << j.dump();
    EXPECT_EQ(j.at("capabilities").at("size_tier").at("percent"), 10) << j.dump();
  }
}

// A short gate of each kernel: dot_product_attention in both dtypes (bf16 runs other dot
// algorithms), the Pallas kernels in f32 (bf16 runs the same interpreted code); the larger
// gates are FINDINGS.md's.
TEST_F(JaxTest, ShortGateFailsOnlyWithClassifiedCauses) {
  if (!missing_.empty()) GTEST_SKIP() << "jax-* adapters unavailable: " << missing_;
  for (const char* adapter : {"jax-dpa-xla-*", "jax-pallas-mha-f32", "jax-pallas-decode-f32"}) {
    test::ExpectClassifiedShortGate(dir_, adapter, 5, kKnownFails, kKnownErrors);
  }
}

// The backend with local_window_size's left bound one key too wide
// (--defect-window-one-wider, one line of backend.py) fails non-interference on the
// windowed case (a query reads a key outside its window); without the flag it passes.
TEST_F(JaxTest, PlantedWindowDefectFails) {
  if (!missing_.empty()) GTEST_SKIP() << "jax-* adapters unavailable: " << missing_;
  {
    std::ofstream(dir_ / "window.json") << test::kSquareWindowCase;
  }
  const std::string backend = "exec:" + PythonCommand(FindPythonBackend(kJaxLibrary), kJaxAdapters[0]);
  ASSERT_NE(backend.find("dpa-xla-f32"), std::string::npos) << backend;
  const std::string planted = backend + " --defect-window-one-wider";
  const std::string env = "ATTNCHECK_CALL_TIMEOUT=60";  // the exec: form has the plain 10 s limit
  const CliRun good = test::RunAttncheck(
      dir_, dir_, "replay window.json --law non-interference --adapter " + test::Quoted(backend), env);
  EXPECT_EQ(good.code, 0) << good.out << good.err;
  EXPECT_EQ(good.out.find("skip"), std::string::npos) << good.out;  // the window reached the kernel
  const CliRun bad = test::RunAttncheck(
      dir_, dir_, "replay window.json --law non-interference --adapter " + test::Quoted(planted), env);
  EXPECT_EQ(bad.code, 1) << bad.out << bad.err;
}

// Causal top-left, one head, Tq = Tk = 20: mha runs it at its bucket (backend.py's
// mha_bucket), two 16-blocks (the padding in segment −1), 3 rows and 4 heads, so the
// backward kernels' causal bounds and masks run over two blocks.
const std::string kCausalTwoBlockCase = test::CausalCase(R"("q_heads": 1, "kv_heads": 1)", 20);

// Pallas mha's backward (jax.vjp, the Pallas backward kernels) called without the causal
// mask while the forward keeps it (--defect-backward-unmasked, one line of backend.py, the
// Triton tutorial's bug class) fails backward-non-interference: future keys get dK; without
// the flag the causal case passes.
TEST_F(JaxTest, PlantedBackwardMaskDefectFails) {
  if (!missing_.empty()) GTEST_SKIP() << "jax-* adapters unavailable: " << missing_;
  const std::string backend = "exec:" + PythonCommand(FindPythonBackend(kJaxLibrary), kJaxAdapters[2]);
  ASSERT_NE(backend.find("pallas-mha-f32"), std::string::npos) << backend;
  test::ExpectPlantedDefectFails(dir_, kCausalTwoBlockCase, "backward-non-interference", backend,
                                 "--defect-backward-unmasked");
}

}  // namespace
}  // namespace attncheck
