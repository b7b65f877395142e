// `attncheck bench`: how fast each law checks cases on one adapter. Cases are
// decoded inside the adapter's capabilities, narrowed by --max-*; only the checks
// are timed (std::chrono::steady_clock). With Google Benchmark available,
// --google-benchmark registers one benchmark per law instead.
#include <chrono>
#include <memory>

#include <fmt/format.h>

#include "adapters/registry.h"
#include "cases/decode.h"
#include "cases/random_source.h"
#include "cli/commands.h"

#ifdef ATTNCHECK_HAVE_BENCHMARK
#include <benchmark/benchmark.h>
#endif

namespace attncheck::cli {
namespace {

using Clock = std::chrono::steady_clock;

struct BenchOptions {
  std::string adapter = "eigen";
  std::vector<std::string> laws;
  int cases = 2000;
  uint64_t seed = 1;
  int max_batch = 0;  // 0 = the adapter's own limit
  int max_heads = 0;
  int max_tokens = 0;
  int max_head_dim = 0;
  bool google_benchmark = false;
};

Capabilities BenchCapabilities(const Adapter& adapter, const BenchOptions& options) {
  Capabilities caps = adapter.capabilities();
  if (options.max_batch > 0) caps.max_batch = options.max_batch;
  if (options.max_heads > 0) caps.max_heads = options.max_heads;
  if (options.max_tokens > 0) caps.max_tokens = options.max_tokens;
  if (options.max_head_dim > 0) caps.max_head_dim = options.max_head_dim;
  return caps;
}

std::vector<Case> BenchCases(const Law& law, const Capabilities& caps, const BenchOptions& options) {
  std::vector<Case> cases;
  cases.reserve(static_cast<size_t>(options.cases));
  const uint64_t stream_seed = LawStreamSeed(options.seed, law.name);
  for (int i = 0; i < options.cases; ++i) {
    RandomSource source(stream_seed, static_cast<uint64_t>(i));
    cases.push_back(Decode(source, caps));
  }
  return cases;
}

#ifdef ATTNCHECK_HAVE_BENCHMARK
int RunGoogleBenchmark(const std::vector<const Law*>& laws, const BenchOptions& options) {
  struct Fixture {
    const Law* law;
    std::unique_ptr<Adapter> adapter;
    std::vector<Case> cases;
  };
  std::vector<std::shared_ptr<Fixture>> fixtures;
  for (const Law* law : laws) {
    auto fixture = std::make_shared<Fixture>();
    fixture->law = law;
    fixture->adapter = MakeAdapter(options.adapter);
    fixture->cases = BenchCases(*law, BenchCapabilities(*fixture->adapter, options), options);
    if (fixture->cases.empty()) continue;
    fixtures.push_back(fixture);
    const std::string name = fmt::format("{}/{}", law->name, options.adapter);
    benchmark::RegisterBenchmark(name.c_str(), [fixture](benchmark::State& state) {
      size_t n = 0;
      for (auto _ : state) {
        Verdict v = RunCheck(*fixture->law, *fixture->adapter, fixture->cases[n], Options{});
        benchmark::DoNotOptimize(v);
        n = (n + 1) % fixture->cases.size();
      }
      state.SetItemsProcessed(state.iterations());
    });
  }
  int argc = 1;
  char program[] = "attncheck";
  char* argv[] = {program, nullptr};
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return kExitHeld;
}
#endif

int RunBench(const BenchOptions& options) {
  const std::vector<const Law*> laws = ResolveLaws(options.laws);
  if (options.google_benchmark) {
#ifdef ATTNCHECK_HAVE_BENCHMARK
    return RunGoogleBenchmark(laws, options);
#endif
  }
  struct Row {
    std::string law;
    int cases = 0, passed = 0, failed = 0, skipped = 0, errors = 0;
    double seconds = 0.0, run_seconds = 0.0;  // all checks; non-skipped checks
  };
  std::vector<Row> rows;
  for (const Law* law : laws) {
    const std::unique_ptr<Adapter> adapter = MakeAdapter(options.adapter);
    const std::vector<Case> cases = BenchCases(*law, BenchCapabilities(*adapter, options), options);
    Row row;
    row.law = std::string(law->name);
    for (const Case& c : cases) {
      const Clock::time_point start = Clock::now();
      const Verdict v = RunCheck(*law, *adapter, c, Options{});
      const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
      ++row.cases;
      row.seconds += seconds;
      switch (v.outcome) {
        case Outcome::kPass: ++row.passed; break;
        case Outcome::kFail: ++row.failed; break;
        case Outcome::kSkip: ++row.skipped; break;
        case Outcome::kError: ++row.errors; break;
      }
      if (v.outcome != Outcome::kSkip) row.run_seconds += seconds;
    }
    rows.push_back(row);
  }

  auto rate = [](int n, double seconds) { return seconds > 0.0 ? fmt::format("{:.0f}", n / seconds) : std::string("-"); };
  std::vector<std::vector<std::string>> table = {
      {"law", "cases", "passed", "failed", "skipped", "errors", "cases/s", "run cases/s", "µs/case"}};
  for (const Row& row : rows) {
    const int run = row.cases - row.skipped;
    table.push_back({row.law, fmt::format("{}", row.cases), fmt::format("{}", row.passed),
                     fmt::format("{}", row.failed), fmt::format("{}", row.skipped), fmt::format("{}", row.errors),
                     rate(row.cases, row.seconds), rate(run, row.run_seconds),
                     row.cases > 0 ? fmt::format("{:.1f}", 1e6 * row.seconds / row.cases) : std::string("-")});
  }
  std::vector<size_t> widths(table.front().size(), 0);
  auto width = [](const std::string& s) {
    size_t w = 0;
    for (char ch : s) w += (static_cast<unsigned char>(ch) & 0xC0) != 0x80 ? 1 : 0;
    return w;
  };
  for (const auto& line : table) {
    for (size_t c = 0; c < line.size(); ++c) widths[c] = std::max(widths[c], width(line[c]));
  }
  fmt::print("adapter {}, seed {}, {} cases per law (run cases/s excludes skipped cases)\n", options.adapter,
             options.seed, options.cases);
  for (size_t r = 0; r < table.size(); ++r) {
    std::string text;
    for (size_t c = 0; c < table[r].size(); ++c) {
      const std::string pad(widths[c] - width(table[r][c]), ' ');
      text += c == 0 ? table[r][c] + pad : "  " + pad + table[r][c];
    }
    fmt::print("{}\n", text);
    if (r == 0) {
      std::string rule;
      for (size_t c = 0; c < widths.size(); ++c) rule += (c == 0 ? "" : "  ") + std::string(widths[c], '-');
      fmt::print("{}\n", rule);
    }
  }
  return kExitHeld;
}

}  // namespace

Command AddBenchCommand(CLI::App& program) {
  auto options = std::make_shared<BenchOptions>();
  CLI::App* app = program.add_subcommand("bench", "Time each law's checks on one adapter (cases/s, µs per case)");
  app->add_option("--adapter,-a", options->adapter, "Adapter to time")->capture_default_str();
  app->add_option("--law,-l", options->laws, "Law to time, or a pattern with * (repeatable; default: every law)")
      ->allow_extra_args(false);
  app->add_option("--cases,-n", options->cases, "Cases per law")->capture_default_str()->check(IntIn(0, 1000000000));
  app->add_option("--seed,-s", options->seed, "Seed of the case streams")->capture_default_str();
  app->add_option("--max-batch", options->max_batch, "Largest batch drawn (default: the adapter's limit)")
      ->check(IntIn(1, 1000000));
  app->add_option("--max-heads", options->max_heads, "Most query heads drawn (default: the adapter's limit)")
      ->check(IntIn(1, 1000000));
  app->add_option("--max-tokens", options->max_tokens, "Longest key length drawn (default: the adapter's limit)")
      ->check(IntIn(1, 1000000));
  app->add_option("--max-head-dim", options->max_head_dim, "Largest head dim drawn (default: the adapter's limit)")
      ->check(IntIn(1, 1000000));
#ifdef ATTNCHECK_HAVE_BENCHMARK
  app->add_flag("--google-benchmark", options->google_benchmark,
                "Run through Google Benchmark instead (one benchmark per law, cycling over the cases)");
#endif
  return {app, [options] { return RunBench(*options); }};
}

}  // namespace attncheck::cli
