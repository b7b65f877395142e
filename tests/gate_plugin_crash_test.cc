// A crashing plugin under `attncheck gate`: plugin:PATH runs isolated by default
// (the crash is a classified error, exit 3, with reports and summary.json); with
// --in-process the gate dies of the signal and in-flight.json names the case.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/cli_support.h"

namespace attncheck::test {
namespace {

const std::string kSegfaultPlugin = std::string(ATTNCHECK_EXAMPLE_PLUGIN_DIR) + "/libexample_plugin_segfault.so";

class GatePluginCrashTest : public ScratchDirTest {
 protected:
  CliRun Gate(const std::string& extra) {
    return Run("gate --adapter " + Quoted("plugin:" + kSegfaultPlugin) +
               " --law reference-agreement --cases 20 --seed 1 --quiet --no-shrink --report-dir report " + extra);
  }
};

TEST_F(GatePluginCrashTest, PluginRunsIsolatedByDefault) {
  const CliRun run = Gate("");
  EXPECT_EQ(run.code, 3) << run.out << run.err;
  const nlohmann::json summary = nlohmann::json::parse(ReadText(dir_ / "report" / "summary.json"));
  const nlohmann::json& result = summary["results"][0];
  EXPECT_EQ(result["adapter"], "plugin:" + kSegfaultPlugin);  // as the user named it
  EXPECT_EQ(result["ran_as"], "isolated:plugin:" + kSegfaultPlugin);
  EXPECT_EQ(result["cases"], 20);
  EXPECT_GT(result["errors"], 0);
  EXPECT_GT(result["passed"], 0);  // the run went on past the crashes
  const std::vector<std::string> findings = Lines(ReadText(dir_ / "report" / "findings.jsonl"), true);
  ASSERT_FALSE(findings.empty());
  const nlohmann::json first = nlohmann::json::parse(findings.front());
  EXPECT_EQ(first["fault"], "crash");
  EXPECT_TRUE(fs::exists(dir_ / first["report"].get<std::string>() / "case.json"));  // relative to the run
  EXPECT_FALSE(fs::exists(dir_ / "report" / "in-flight.json"));
}

TEST_F(GatePluginCrashTest, InProcessCrashLeavesTheCaseInFlight) {
  const CliRun run = Gate("--in-process");
  EXPECT_EQ(run.code, -1) << "expected death by signal; " << run.out << run.err;
  EXPECT_FALSE(fs::exists(dir_ / "report" / "summary.json"));
  const nlohmann::json in_flight = nlohmann::json::parse(ReadText(dir_ / "report" / "in-flight.json"));
  ASSERT_EQ(in_flight["in_flight"].size(), 1u);
  const nlohmann::json& entry = in_flight["in_flight"][0];
  EXPECT_EQ(entry["law"], "reference-agreement");
  EXPECT_EQ(entry["adapter"], "plugin:" + kSegfaultPlugin);
  EXPECT_TRUE(entry["case_index"].is_number_unsigned());
  EXPECT_TRUE(entry["case"].is_object());
  // The recorded case is the one that crashed: replayed in isolation, it crashes again.
  fs::create_directories(dir_ / "replay");
  std::ofstream(dir_ / "replay" / "case.json") << entry["case"].dump();
  const CliRun replay = Run("replay replay/case.json --adapter " + Quoted("isolated:plugin:" + kSegfaultPlugin) +
                            " --law reference-agreement");
  EXPECT_EQ(replay.code, 3) << replay.out << replay.err;
}

}  // namespace
}  // namespace attncheck::test
