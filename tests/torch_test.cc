// The PyTorch 2.13 adapters (adapters/torch) through the program: listed as unavailable
// with the reason without a Python that has torch 2.13, listed and made when there is one,
// a short gate of each variant failing only with the causes FINDINGS.md classifies, and
// one-line defects planted in the backend (a window, the flash backward's lse) failing.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "adapters/torch/torch_adapters.h"
#include "tests/cli_support.h"
#include "tests/library_gate.h"
#include "tests/windowed_case.h"

namespace attncheck {
namespace {

using test::CliRun;

// The (law, adapter) pairs with failures FINDINGS.md classifies (section "PyTorch 2.13 (CPU)").
const test::KnownFails kKnownFails = {};

class TorchTest : public test::ScratchDirTest {
 protected:
  void SetUp() override {
    test::ScratchDirTest::SetUp();
    missing_ = FindPythonBackend(kTorchLibrary).missing;
  }
  std::string missing_;
};

// Without the Python (ATTNCHECK_TORCH_PYTHON names none) every torch-* adapter is listed
// as unavailable with the reason, naming one is a usage error, and `*` leaves them out.
TEST_F(TorchTest, UnavailableWithoutPython) {
  test::ExpectUnavailable(dir_, "ATTNCHECK_TORCH_PYTHON=/nonexistent",
                          test::OtherPythonLibrariesUnavailable(kTorchLibrary), kTorchAdapters,
                          "no Python at /nonexistent (scripts/install-deps.sh --with-python)", "torch-*");
}

// The GPU variants (torch-cuda-*): without ATTNCHECK_TORCH_CUDA_PYTHON each is listed as
// unavailable with the reason and naming one is a usage error; with it naming a Python
// whose torch sees no CUDA device (the environment's CPU build), the backend stops at the
// handshake and says why, instead of running the case on the CPU under a GPU's name.
TEST_F(TorchTest, CudaVariantsNeedTheirPythonAndAGpu) {
  const std::string unset =
      "ATTNCHECK_TORCH_CUDA_PYTHON= " + test::OtherPythonLibrariesUnavailable(kTorchCudaLibrary);
  const CliRun list = test::RunAttncheck(dir_, dir_, "list", unset);
  ASSERT_EQ(list.code, 0) << list.err;
  for (const auto& known : kTorchCudaAdapters) {
    int found = 0;
    for (const std::string& line : test::Lines(list.out)) {
      if (line.find(std::string(known.name) + " ") == std::string::npos) continue;
      ++found;
      EXPECT_NE(line.find("ATTNCHECK_TORCH_CUDA_PYTHON is not set"), std::string::npos) << line;
    }
    EXPECT_EQ(found, 1) << known.name << " listed once, its reason said once:\n" << list.out;
  }
  const CliRun named = test::RunAttncheck(dir_, dir_, "gate --adapter torch-cuda-sdpa-flash-f16 --cases 1", unset);
  EXPECT_EQ(named.code, 2) << named.out;
  test::ExpectOneErrorLine(named);
  if (!missing_.empty()) GTEST_SKIP() << "torch-* adapters unavailable: " << missing_;
  const char* given = std::getenv("ATTNCHECK_TORCH_PYTHON");
  const std::string python = given != nullptr && *given != '\0'
                                 ? std::string(given)
                                 : std::string(ATTNCHECK_SOURCE_DIR) + "/third_party/venv/bin/python";
  const CliRun cpu = test::RunAttncheck(dir_, dir_, "gate --adapter torch-cuda-sdpa-math-f16 --cases 1 --law non-interference",
                                  "ATTNCHECK_TORCH_CUDA_PYTHON=" + test::Quoted(python));
  EXPECT_EQ(cpu.code, 2) << cpu.out;
  EXPECT_NE(cpu.err.find("sees no CUDA device"), std::string::npos) << cpu.err;
}

// Installed: an adapter answers `list --adapter` with the torch version its backend
// reports and the size tier it declares.
TEST_F(TorchTest, ListedAndMadeWhenInstalled) {
  if (!missing_.empty()) GTEST_SKIP() << "torch-* adapters unavailable: " << missing_;
  for (const char* name : {"torch-sdpa-math-f32", "torch-flex-eager-f32", "torch-mha-f32"}) {
    const CliRun run = Run(std::string("list --json --adapter ") + name);
    ASSERT_EQ(run.code, 0) << run.err;
    const nlohmann::json j = nlohmann::json::parse(run.out);
    EXPECT_EQ(j.at("name"), name);
    EXPECT_NE(j.at("description").get<std::string>().find("torch 2.13.0"), std::string::npos) << j.dump();
    EXPECT_EQ(j.at("capabilities").at("size_tier").at("percent"), 10) << j.dump();
  }
}

// A short gate of the eager kernels (SDPA math in every dtype, SDPA's CPU flash kernel,
// FlexAttention eager, MHA), f32 where the dtypes run the same code path; the gates of
// every variant at 300 cases are FINDINGS.md's (a CI machine has two cores).
TEST_F(TorchTest, ShortGateFailsOnlyWithClassifiedCauses) {
  if (!missing_.empty()) GTEST_SKIP() << "torch-* adapters unavailable: " << missing_;
  test::ExpectClassifiedShortGate(dir_, "torch-sdpa-math-*", 5, kKnownFails);
  test::ExpectClassifiedShortGate(dir_, "torch-sdpa-flash-f32", 5, kKnownFails);
  test::ExpectClassifiedShortGate(dir_, "torch-flex-eager-f32", 3, kKnownFails);
  test::ExpectClassifiedShortGate(dir_, "torch-mha-f32", 5, kKnownFails);
}

using test::kWindowedCase;

// The FlexAttention backend with its window's left bound one key too wide
// (--defect-window-one-wider, one line of backend.py) fails non-interference on the windowed
// case (the query reads a key outside its window); the same backend without the flag passes.
TEST_F(TorchTest, PlantedWindowDefectFails) {
  if (!missing_.empty()) GTEST_SKIP() << "torch-* adapters unavailable: " << missing_;
  {
    std::ofstream(dir_ / "window.json") << kWindowedCase;
  }
  const std::string backend = "exec:" + PythonCommand(FindPythonBackend(kTorchLibrary), kTorchAdapters[6]);
  ASSERT_NE(backend.find("flex-eager-f32"), std::string::npos) << backend;
  const std::string planted = backend + " --defect-window-one-wider";
  const std::string env = "ATTNCHECK_CALL_TIMEOUT=120";  // the exec: form has the plain 10 s limit
  const CliRun good = test::RunAttncheck(
      dir_, dir_, "replay window.json --law non-interference --adapter " + test::Quoted(backend), env);
  EXPECT_EQ(good.code, 0) << good.out << good.err;
  const CliRun bad = test::RunAttncheck(
      dir_, dir_, "replay window.json --law non-interference --adapter " + test::Quoted(planted), env);
  EXPECT_EQ(bad.code, 1) << bad.out << bad.err;
}

// Three rows, each with a window of 3 keys (seqused_k 9, 7 and 5): masked-rows adds a
// fourth row whose every key is blocked (properties/law_support.h EmptyRowsCaseFor), one
// more than the batch the adapters declare (3).
const std::string kThreeRowWindowCase = test::WindowCase(R"("query_len": 3,
  "rows": [{"documents": [9], "left_pad": 0, "right_pad": 0, "position_offset": 0, "prefix_len": 0},
           {"documents": [7], "left_pad": 0, "right_pad": 2, "position_offset": 0, "prefix_len": 0},
           {"documents": [5], "left_pad": 0, "right_pad": 4, "position_offset": 0, "prefix_len": 0}])");

// Compiled FlexAttention pads each call into a static shape bucket: a batch of four, which
// masked-rows hands it, has its own bucket (it padded every batch to 3 and answered
// "The expanded size of the tensor (3) must match the existing size (4)" for 63 cases of
// a 1,588-case gate). One call compiles a kernel (~10 s cold, g++); the case's empty row
// reads the NaN poisoned into its blocked values (F18, a hazard), and nothing errs.
TEST_F(TorchTest, CompiledFlexTakesMaskedRowsFourthBatchRow) {
  if (!missing_.empty()) GTEST_SKIP() << "torch-* adapters unavailable: " << missing_;
  {
    std::ofstream(dir_ / "three_rows.json") << kThreeRowWindowCase;
  }
  const CliRun run = test::RunAttncheck(
      dir_, dir_, "replay three_rows.json --law masked-rows --adapter torch-flex-compiled-f32", "");
  EXPECT_EQ(run.code, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("verdict:  hazard"), std::string::npos) << run.out << run.err;
  EXPECT_NE(run.out.find("NaN poisoned into"), std::string::npos) << run.out << run.err;
}

// Causal top-left, GQA 2/1, Tq = Tk = 20: every row sees a different number of keys, so
// each row's log-sum-exp differs from the row before.
const std::string kCausalGqaCase = test::CausalCase(R"("q_heads": 2, "kv_heads": 1)", 20);

// The CPU flash kernel's backward answering each row's log-sum-exp from the row before
// (--defect-backward-lse-other-row, one line of backend.py; dq/dk/dv untouched) fails
// backward-agreement, which compares the lse with the reference's; without the flag it passes.
TEST_F(TorchTest, PlantedBackwardLseDefectFails) {
  if (!missing_.empty()) GTEST_SKIP() << "torch-* adapters unavailable: " << missing_;
  const std::string backend = "exec:" + PythonCommand(FindPythonBackend(kTorchLibrary), kTorchAdapters[3]);
  ASSERT_NE(backend.find("sdpa-flash-f32"), std::string::npos) << backend;
  test::ExpectPlantedDefectFails(dir_, kCausalGqaCase, "backward-agreement", backend,
                                 "--defect-backward-lse-other-row");
}

}  // namespace
}  // namespace attncheck
