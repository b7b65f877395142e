// The OpenVINO 2026.4 adapter (adapters/openvino) through the program: listed as unavailable
// with the reason without a Python that has openvino 2026.4, listed and made when there is one,
// a short gate failing only with the causes FINDINGS.md classifies, and a one-line defect
// planted in the backend failing the gate.
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include <nlohmann/json.hpp>

#include "adapters/openvino/openvino_adapters.h"
#include "tests/cli_support.h"
#include "tests/library_gate.h"
#include "tests/windowed_case.h"

namespace attncheck {
namespace {

using test::CliRun;

class OpenVinoTest : public test::ScratchDirTest {
 protected:
  void SetUp() override {
    test::ScratchDirTest::SetUp();
    missing_ = FindPythonBackend(kOpenVinoLibrary).missing;
  }
  std::string missing_;
};

TEST_F(OpenVinoTest, UnavailableWithoutPython) {
  test::ExpectUnavailable(dir_, "ATTNCHECK_OPENVINO_PYTHON=/nonexistent",
                          test::OtherPythonLibrariesUnavailable(kOpenVinoLibrary), kOpenVinoAdapters,
                          "no Python at /nonexistent (scripts/install-deps.sh --with-python)", "openvino-*");
}

// A Python without openvino lists them as unavailable, naming the missing package.
TEST_F(OpenVinoTest, UnavailableWithoutOpenVino) {
  const std::string python = "/usr/bin/python3";  // Debian's: dist-packages, no site-packages with openvino
  if (access(python.c_str(), X_OK) != 0) GTEST_SKIP() << "no " << python;
  test::ExpectUnavailable(dir_, "ATTNCHECK_OPENVINO_PYTHON=" + python,
                          test::OtherPythonLibrariesUnavailable(kOpenVinoLibrary), kOpenVinoAdapters,
                          "openvino is not installed for " + python + " (scripts/install-deps.sh --with-python)",
                          "openvino-*");
}

// Installed: the adapter answers `list --adapter` with the version and what the CPU plugin
// runs (read from the compiled model's runtime graph), and the size tier it declares.
TEST_F(OpenVinoTest, ListedAndMadeWhenInstalled) {
  if (!missing_.empty()) GTEST_SKIP() << "openvino-* adapters unavailable: " << missing_;
  for (const PythonAdapterName& known : kOpenVinoAdapters) {
    const CliRun run = Run("list --json --adapter " + std::string(known.name));
    ASSERT_EQ(run.code, 0) << run.err;
    const nlohmann::json j = nlohmann::json::parse(run.out);
    EXPECT_EQ(j.at("name"), known.name);
    const std::string description = j.at("description");
    EXPECT_NE(description.find("openvino 2026.4."), std::string::npos) << description;
    EXPECT_NE(description.find("runs: "), std::string::npos) << description;
    EXPECT_EQ(j.at("capabilities").at("size_tier").at("percent"), 10) << j.dump();
  }
}

TEST_F(OpenVinoTest, ShortGateFailsOnlyWithClassifiedCauses) {
  if (!missing_.empty()) GTEST_SKIP() << "openvino-* adapters unavailable: " << missing_;
  test::ExpectClassifiedShortGate(dir_, "openvino-*", 5, {});
}

// The backend with a bool mask's last key always visible (--defect-last-key-visible, one
// line of backend.py) fails non-interference on a sliding-window case in the bool-visible
// convention (early rows read the last key); without the flag it passes.
TEST_F(OpenVinoTest, PlantedBoolMaskDefectFails) {
  if (!missing_.empty()) GTEST_SKIP() << "openvino-* adapters unavailable: " << missing_;
  std::string bool_case = test::kSquareWindowCase;
  const std::string descriptor = R"("mask": "descriptor")";
  bool_case.replace(bool_case.find(descriptor), descriptor.size(), R"("mask": "bool-visible")");
  test::ExpectPlantedDefectFails(
      dir_, bool_case, "non-interference",
      "exec:" + PythonCommand(FindPythonBackend(kOpenVinoLibrary), kOpenVinoAdapters[0]), "--defect-last-key-visible");
}

}  // namespace
}  // namespace attncheck
