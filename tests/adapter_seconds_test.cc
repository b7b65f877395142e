// AdapterSeconds (adapters/harness.h): the harness times every adapter call it
// makes, and only those; bench prints the share per law ("in adapter %").
#include <algorithm>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "adapters/harness.h"
#include "adapters/registry.h"
#include "reference/scenario.h"
#include "tests/cli_support.h"
#include "tests/small_case.h"

namespace attncheck {
namespace {

constexpr auto kNap = std::chrono::milliseconds(30);

// The reference adapter, napping before each attention call (and throwing after
// it when asked): a call whose length is known from below.
class NappingAdapter final : public Adapter {
 public:
  explicit NappingAdapter(bool throws) : inner_(MakeAdapter("reference")), throws_(throws) {}
  std::string name() const override { return "napping"; }
  std::string description() const override { return "the reference, slowly"; }
  Capabilities capabilities() const override { return inner_->capabilities(); }
  void attention(const AttentionArgs& args) override {
    std::this_thread::sleep_for(kNap);
    inner_->attention(args);
    if (throws_) throw std::runtime_error("after the nap");
  }

 private:
  std::unique_ptr<Adapter> inner_;
  bool throws_;
};

Case Small() { return test::OneDocumentCase(6, 8, 3); }

double Seconds(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }

TEST(AdapterSeconds, CountsTheAdapterCallAndNotTheHarness) {
  NappingAdapter adapter(/*throws=*/false);
  const reference::Scenario s = reference::MakeScenario(Small());
  const double before = AdapterSeconds();
  const auto start = std::chrono::steady_clock::now();
  const AdapterRun run = RunAttention(adapter, s);
  const double total = Seconds(std::chrono::steady_clock::now() - start);
  const double inside = AdapterSeconds() - before;
  ASSERT_TRUE(run.ok()) << run.fault;
  EXPECT_GE(inside, Seconds(kNap));
  EXPECT_LE(inside, total);
}

TEST(AdapterSeconds, CountsACallThatThrows) {
  NappingAdapter adapter(/*throws=*/true);
  const reference::Scenario s = reference::MakeScenario(Small());
  const double before = AdapterSeconds();
  const AdapterRun run = RunAttention(adapter, s);
  EXPECT_FALSE(run.ok());
  EXPECT_GE(AdapterSeconds() - before, Seconds(kNap));
}

TEST(AdapterSeconds, StandsStillWithoutAdapterCalls) {
  const double before = AdapterSeconds();
  const reference::Scenario s = reference::MakeScenario(Small());
  EXPECT_FALSE(WhySessionCannotExpress(s, SessionSteps(s.c)).has_value());
  EXPECT_EQ(AdapterSeconds(), before);
}

// bench: an "in adapter %" column, a whole percentage in (0, 100] per law row.
class BenchShareTest : public test::ScratchDirTest {};

TEST_F(BenchShareTest, BenchPrintsTheShareInsideTheAdapter) {
  const test::CliRun run = Run("bench --adapter eigen --law non-interference --cases 20 --max-tokens 8");
  ASSERT_EQ(run.code, 0) << run.err;
  const std::vector<std::string> lines = test::Lines(run.out);
  const auto header = std::find_if(lines.begin(), lines.end(),
                                   [](const std::string& l) { return l.rfind("law ", 0) == 0; });
  ASSERT_NE(header, lines.end()) << run.out;
  ASSERT_TRUE(header->ends_with("in adapter %")) << *header;
  const auto row = std::find_if(lines.begin(), lines.end(),
                                [](const std::string& l) { return l.rfind("non-interference ", 0) == 0; });
  ASSERT_NE(row, lines.end()) << run.out;
  const std::string share = row->substr(row->find_last_of(' ') + 1);
  ASSERT_FALSE(share.empty());
  ASSERT_TRUE(std::all_of(share.begin(), share.end(), [](char ch) { return ch >= '0' && ch <= '9'; })) << *row;
  EXPECT_GT(std::stoi(share), 0) << *row;
  EXPECT_LE(std::stoi(share), 100) << *row;
}

}  // namespace
}  // namespace attncheck
