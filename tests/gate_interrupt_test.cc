// `attncheck gate` stopped by SIGINT or SIGTERM: it finishes the current case,
// writes summary.json, --junit and index.html for what ran, marked interrupted,
// and exits 128 + the signal.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/cli_support.h"

namespace attncheck::test {
namespace {

class GateInterruptTest : public ScratchDirTest {
 protected:
  // Starts a gate far too long to finish, sends `signal` about a second after it
  // created its report folder, and returns its exit code (−1 when it died of it).
  int InterruptedGate(int signal) {
    const std::string command = AttncheckCommand(
        dir_, dir_, "gate --cases 1000000 --seed 3 --quiet --report-dir report --junit junit.xml --json out.json");
    const pid_t pid = fork();
    if (pid == 0) {
      execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    EXPECT_GT(pid, 0);
    for (int wait = 0; wait < 300 && !fs::exists(dir_ / "report"); ++wait) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    std::this_thread::sleep_for(std::chrono::seconds(1));
    kill(pid, signal);
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  // summary.json, --json, --junit and index.html all say the run was interrupted by `name`.
  void ExpectMarkedInterrupted(const std::string& name) {
    const nlohmann::json summary = nlohmann::json::parse(ReadText(dir_ / "report" / "summary.json"));
    EXPECT_EQ(summary["interrupted"], true);
    EXPECT_EQ(summary["signal"], name);
    ASSERT_FALSE(summary["results"].empty());
    int cases = 0;
    for (const auto& result : summary["results"]) cases += result["cases"].get<int>();
    EXPECT_GT(cases, 0);  // what ran is counted
    EXPECT_EQ(summary["results"].back()["interrupted"], true);
    EXPECT_LT(summary["results"].back()["cases"], 1000000);
    EXPECT_EQ(nlohmann::json::parse(ReadText(dir_ / "out.json")), summary);
    EXPECT_NE(ReadText(dir_ / "junit.xml").find("<property name=\"interrupted\" value=\"" + name + "\"/>"),
              std::string::npos);
    EXPECT_NE(ReadText(dir_ / "report" / "index.html").find("Interrupted by " + name), std::string::npos);
    EXPECT_NE(ReadText(dir_ / "stderr.txt").find("gate interrupted by " + name), std::string::npos);
    EXPECT_FALSE(fs::exists(dir_ / "report" / "in-flight.json"));  // removed: the run ended cleanly
    EXPECT_TRUE(fs::exists(dir_ / "report" / "run.json"));  // what the run wrote, for the next run to remove
  }
};

TEST_F(GateInterruptTest, SigintWritesEverythingAndExits130) {
  EXPECT_EQ(InterruptedGate(SIGINT), 130);
  ExpectMarkedInterrupted("SIGINT");
}

TEST_F(GateInterruptTest, SigtermWritesEverythingAndExits143) {
  EXPECT_EQ(InterruptedGate(SIGTERM), 143);
  ExpectMarkedInterrupted("SIGTERM");
}

TEST_F(GateInterruptTest, AFinishedGateIsNotMarkedInterrupted) {
  ASSERT_EQ(Run("gate --adapter reference --law non-interference --cases 5 --quiet --report-dir report").code, 0);
  const nlohmann::json summary = nlohmann::json::parse(ReadText(dir_ / "report" / "summary.json"));
  EXPECT_EQ(summary["interrupted"], false);
  EXPECT_FALSE(summary.contains("signal"));
  EXPECT_FALSE(summary["results"][0].contains("interrupted"));
  EXPECT_FALSE(fs::exists(dir_ / "report" / "in-flight.json"));
}

}  // namespace
}  // namespace attncheck::test
