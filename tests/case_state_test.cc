// Nothing the harness computes for one case reaches another adapter (DESIGN §5;
// tests/harness_overflow_test.cc for one case to the next): a gate of an adapter
// the harness refuses cases of ("k as the harness encodes it overflows f16"),
// followed by another adapter, checks the second as many cases as a gate of it alone.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/cli_support.h"

namespace attncheck {
namespace {

class GateCaseState : public test::ScratchDirTest {
 protected:
  // The checked cases (passed, failed, hazards) of each pair in summary.json, "law × adapter" → count.
  std::map<std::string, int> Checked(const std::string& adapters) {
    // Case 66 of seed 1 is one the harness refuses on the backend: its pair ends on a refusal.
    const test::CliRun run = Run("gate " + adapters + " --law non-interference --cases 67 --seed 1 --quiet --no-shrink "
                                 "--report-dir rep");
    EXPECT_LE(run.code, 1) << run.out << run.err;
    const nlohmann::json summary = nlohmann::json::parse(test::ReadText(dir_ / "rep" / "summary.json"));
    std::map<std::string, int> checked;
    for (const nlohmann::json& r : summary["results"]) {
      const std::string pair = r["law"].get<std::string>() + " × " + r["adapter"].get<std::string>();
      checked[pair] = r["passed"].get<int>() + r["failed"].get<int>() + r["hazards"].get<int>();
      if (r.contains("skip_reasons")) skips[pair] = r["skip_reasons"].dump();
    }
    return checked;
  }
  std::map<std::string, std::string> skips;
};

// The in-tree backend tests/data/process/xpos_f16_backend.py takes xPos-encoded
// q and k in f16 (the harness refuses the cases whose keys overflow), then eigen:
// eigen checks as many cases as alone.
TEST_F(GateCaseState, AnAdapterAfterARefusingOneChecksAsManyCasesAsAlone) {
  const std::string backend = test::Quoted("exec:python3 " + std::string(ATTNCHECK_SOURCE_DIR) +
                                           "/tests/data/process/xpos_f16_backend.py");
  const std::string eigen_pair = "non-interference × eigen";
  const int alone = Checked("--adapter eigen")[eigen_pair];
  const std::map<std::string, int> after = Checked("--adapter " + backend + " --adapter eigen");
  const std::string backend_pair = "non-interference × exec:python3 " + std::string(ATTNCHECK_SOURCE_DIR) +
                                   "/tests/data/process/xpos_f16_backend.py";
  ASSERT_TRUE(skips.contains(backend_pair));
  EXPECT_NE(skips[backend_pair].find("refused by the harness"), std::string::npos)
      << "the backend must meet refusals for this test to mean anything: " << skips[backend_pair];
  EXPECT_GT(alone, 0);
  EXPECT_EQ(after.at(eigen_pair), alone) << (skips.contains(eigen_pair) ? skips[eigen_pair] : "");
}

}  // namespace
}  // namespace attncheck
