// `attncheck bench`: how fast each law checks cases on one adapter. Cases are
// decoded inside the adapter's capabilities, narrowed by --max-*; only the checks
// are timed (std::chrono::steady_clock), with the share spent inside the adapter's
// calls (AdapterSeconds, adapters/harness.h). With Google Benchmark available,
// --google-benchmark registers one benchmark per law instead. --kill measures how
// fast the laws kill each adapter (the mutants by default): cases and seconds to
// the first failure, median over seeds.
#include <algorithm>
#include <chrono>
#include <ctime>
#include <limits>
#include <map>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "adapters/harness.h"
#include "adapters/mutants/mutants.h"
#include "adapters/registry.h"
#include "cases/features.h"
#include "cases/random_source.h"  // LawStreamSeed
#include "cli/commands.h"
#include "cli/shape_limits.h"

#ifdef ATTNCHECK_HAVE_BENCHMARK
#include <benchmark/benchmark.h>
#endif

namespace attncheck::cli {
namespace {

using Clock = std::chrono::steady_clock;

// CPU time of the calling thread: unlike the wall clock, it does not count the
// time other processes hold the core, so a loaded machine reads about the same.
double ThreadCpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

struct BenchOptions {
  std::string adapter = "eigen";
  std::vector<std::string> laws;
  int cases = 2000;
  uint64_t seed = 1;
  std::vector<std::string> skip_laws;
  ShapeLimits limits;
  std::string tier = "declared";  // declared | size | small (cases/size_tier.h)
  bool google_benchmark = false;
  // --kill
  bool kill = false;
  bool adapter_given = false;  // --adapter on the command line (else 'mutant:*' for --kill)
  int seeds = 20;
  int max_cases = 1000;
  bool expected_laws = false;
};

// --tier size draws every case in the size tier (the adapter's own, or the
// default tier when it declares none); --tier small draws none.
Capabilities BenchCapabilities(const Adapter& adapter, const BenchOptions& options) {
  Capabilities caps = adapter.capabilities();
  if (options.tier != "declared") caps.size_tier.percent = options.tier == "size" ? 100 : 0;
  return Narrow(caps, options.limits);
}

std::vector<Case> BenchCases(const Law& law, const Capabilities& caps, const BenchOptions& options) {
  std::vector<Case> cases;
  cases.reserve(static_cast<size_t>(options.cases));
  const uint64_t stream_seed = LawStreamSeed(options.seed, law.name);
  const std::optional<Capabilities> law_caps = NarrowToNeeds(caps, law.needs, nullptr);  // none: nothing to draw
  const FeatureSteering steering = law_caps ? FeatureSteering(*law_caps, law.needs, stream_seed) : FeatureSteering();
  for (int i = 0; law_caps && i < options.cases; ++i) {
    cases.push_back(steering.Draw(stream_seed, static_cast<uint64_t>(i), *law_caps, law.needs));
  }
  return cases;
}

// Prints rows of cells in aligned columns (the first left-aligned, the rest
// right-aligned, the last left-aligned too when it holds text); row 0 is the
// header, ruled below.
void PrintTable(const std::vector<std::vector<std::string>>& table, bool text_last = false) {
  std::vector<size_t> widths(table.front().size(), 0);
  auto width = [](const std::string& s) {
    size_t w = 0;
    for (char ch : s) w += (static_cast<unsigned char>(ch) & 0xC0) != 0x80 ? 1 : 0;
    return w;
  };
  for (const auto& line : table) {
    for (size_t c = 0; c < line.size(); ++c) widths[c] = std::max(widths[c], width(line[c]));
  }
  for (size_t r = 0; r < table.size(); ++r) {
    std::string text;
    for (size_t c = 0; c < table[r].size(); ++c) {
      const std::string pad(widths[c] - width(table[r][c]), ' ');
      const bool left = c == 0 || (text_last && c + 1 == table[r].size());
      text += c == 0 ? table[r][c] + pad : left ? "  " + table[r][c] : "  " + pad + table[r][c];
    }
    fmt::print("{}\n", text);
    if (r == 0) {
      std::string rule;
      for (size_t c = 0; c < widths.size(); ++c) rule += (c == 0 ? "" : "  ") + std::string(widths[c], '-');
      fmt::print("{}\n", rule);
    }
  }
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
        Verdict v = RunLaw(*fixture->law, *fixture->adapter, fixture->cases[n], Options{});
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

// ---- --kill: cases and seconds until the laws kill an adapter ----

// One run: a fresh adapter, cases drawn law after law (case n checks law n mod L
// on case n / L of that law's stream, as `gate --seed` draws them) until a law
// fails or errs, or max_cases are spent.
struct KillRun {
  bool killed = false;
  int cases = 0;  // checks run, the killing one included
  double seconds = 0.0;
  std::string law;  // the killing law ("law (error)" for an error verdict)
};

KillRun RunUntilKilled(const std::string& adapter_name, const std::vector<const Law*>& laws, uint64_t seed,
                       const BenchOptions& options) {
  KillRun run;
  const Clock::time_point start = Clock::now();
  const std::unique_ptr<Adapter> adapter = MakeAdapter(adapter_name);  // fresh: no state from other runs
  const Capabilities caps = BenchCapabilities(*adapter, options);
  std::vector<uint64_t> streams;
  std::vector<std::optional<Capabilities>> law_caps;  // none: the law has nothing to draw (its turns skip)
  std::vector<FeatureSteering> steerings;
  for (const Law* law : laws) {
    streams.push_back(LawStreamSeed(seed, law->name));
    law_caps.push_back(NarrowToNeeds(caps, law->needs, nullptr));
    steerings.push_back(law_caps.back() ? FeatureSteering(*law_caps.back(), law->needs, streams.back())
                                        : FeatureSteering());
  }
  for (int n = 0; n < options.max_cases; ++n) {
    const size_t l = static_cast<size_t>(n) % laws.size();
    run.cases = n + 1;
    if (!law_caps[l]) continue;
    const Case c = steerings[l].Draw(streams[l], static_cast<uint64_t>(n) / laws.size(), *law_caps[l], laws[l]->needs);
    const Verdict v = RunLaw(*laws[l], *adapter, c, Options{});
    if (IsFinding(v.outcome) && !v.hazard()) {  // a mutant is killed by a failure (or an error), never a hazard
      run.killed = true;
      run.law = std::string(laws[l]->name) + (v.failed() ? "" : " (error)");
      break;
    }
  }
  run.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return run;
}

// The median of values where survivors count as +inf.
double Median(std::vector<double> values) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

int RunKill(const BenchOptions& options) {
  const std::vector<std::string> adapters =
      ResolveAdapters({options.adapter_given ? options.adapter : std::string("mutant:*")});
  const std::vector<const Law*> chosen = ResolveLaws(options.laws, options.skip_laws);
  constexpr double kSurvived = std::numeric_limits<double>::infinity();
  std::vector<std::vector<std::string>> table = {
      {"adapter", "killed", "median cases", "median s", "max cases", "laws that killed (seeds)"}};
  bool all_killed = true;
  for (const std::string& name : adapters) {
    std::vector<const Law*> laws = chosen;
    if (options.laws.empty() && options.expected_laws) {
      if (const mutants::MutantInfo* info = mutants::FindMutant(name)) {
        laws.clear();
        for (const std::string& law : info->laws) {
          if (std::find(chosen.begin(), chosen.end(), FindLaw(law)) != chosen.end()) laws.push_back(FindLaw(law));
        }
      }
    }
    std::vector<double> cases, seconds;
    std::map<std::string, int> killers;
    int killed = 0, most = 0;
    for (int s = 0; s < options.seeds; ++s) {
      const KillRun run = RunUntilKilled(name, laws, options.seed + static_cast<uint64_t>(s), options);
      cases.push_back(run.killed ? run.cases : kSurvived);
      seconds.push_back(run.killed ? run.seconds : kSurvived);
      if (run.killed) {
        ++killed;
        ++killers[run.law];
        most = std::max(most, run.cases);
      }
    }
    all_killed = all_killed && killed == options.seeds;
    std::vector<std::pair<std::string, int>> ranked(killers.begin(), killers.end());
    std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    std::string by;
    for (const auto& [law, count] : ranked) by += fmt::format("{}{} {}", by.empty() ? "" : ", ", law, count);
    const double median_cases = Median(cases), median_seconds = Median(seconds);
    table.push_back({name, fmt::format("{}/{}", killed, options.seeds),
                     median_cases == kSurvived ? fmt::format(">{}", options.max_cases) : fmt::format("{:g}", median_cases),
                     median_seconds == kSurvived ? std::string("-") : fmt::format("{:.3f}", median_seconds),
                     killed > 0 ? fmt::format("{}", most) : std::string("-"), by.empty() ? std::string("-") : by});
  }
  fmt::print("seeds {}..{}, at most {} cases per run, laws {}\n", options.seed,
             options.seed + static_cast<uint64_t>(options.seeds) - 1, options.max_cases,
             !options.laws.empty()        ? std::string("as given, interleaved")
             : options.expected_laws      ? std::string("each mutant's expected laws, interleaved")
                                          : std::string("all, interleaved"));
  PrintTable(table, /*text_last=*/true);
  return all_killed ? kExitHeld : kExitFailed;
}

int RunBench(const BenchOptions& options) {
  if (options.kill) return RunKill(options);
  const std::vector<const Law*> laws = ResolveLaws(options.laws, options.skip_laws);
  if (options.google_benchmark) {
#ifdef ATTNCHECK_HAVE_BENCHMARK
    return RunGoogleBenchmark(laws, options);
#endif
  }
  struct Row {
    std::string law;
    int cases = 0;
    OutcomeCounts counts;
    double seconds = 0.0, run_seconds = 0.0;  // all checks; non-skipped checks
    double cpu_seconds = 0.0;                  // all checks, thread CPU time
    double adapter_seconds = 0.0;              // all checks, inside the adapter's calls (wall clock)
  };
  std::vector<Row> rows;
  for (const Law* law : laws) {
    const std::unique_ptr<Adapter> adapter = MakeAdapter(options.adapter);
    const std::vector<Case> cases = BenchCases(*law, BenchCapabilities(*adapter, options), options);
    Row row;
    row.law = std::string(law->name);
    for (const Case& c : cases) {
      const double cpu_start = ThreadCpuSeconds();
      const double adapter_start = AdapterSeconds();
      const Clock::time_point start = Clock::now();
      const Verdict v = RunLaw(*law, *adapter, c, Options{});
      const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
      row.adapter_seconds += AdapterSeconds() - adapter_start;
      row.cpu_seconds += ThreadCpuSeconds() - cpu_start;
      ++row.cases;
      row.seconds += seconds;
      row.counts.Add(v.outcome);
      if (Info(v.outcome).checked) row.run_seconds += seconds;
    }
    rows.push_back(row);
  }

  auto rate = [](int n, double seconds) { return seconds > 0.0 ? fmt::format("{:.0f}", n / seconds) : std::string("-"); };
  std::vector<std::vector<std::string>> table = {
      {"law", "cases", "passed", "failed", "hazards", "skipped", "errors", "cases/s", "run cases/s", "µs/case",
       "cpu cases/s", "in adapter %"}};
  for (const Row& row : rows) {
    const int run = row.cases - row.counts[Outcome::kSkip];
    table.push_back({row.law, fmt::format("{}", row.cases), fmt::format("{}", row.counts[Outcome::kPass]),
                     fmt::format("{}", row.counts[Outcome::kFail]), fmt::format("{}", row.counts[Outcome::kHazard]),
                     fmt::format("{}", row.counts[Outcome::kSkip]),
                     fmt::format("{}", row.counts[Outcome::kError]),
                     rate(row.cases, row.seconds), rate(run, row.run_seconds),
                     row.cases > 0 ? fmt::format("{:.1f}", 1e6 * row.seconds / row.cases) : std::string("-"),
                     rate(row.cases, row.cpu_seconds),
                     row.seconds > 0.0 ? fmt::format("{:.0f}", 100.0 * row.adapter_seconds / row.seconds)
                                       : std::string("-")});
  }
  fmt::print(
      "adapter {}, tier {}, seed {}, {} cases per law (run cases/s excludes skipped cases; cpu cases/s counts the "
      "thread's CPU time, not the wall clock; in adapter % is the wall-clock share spent inside the adapter's calls)\n",
      options.adapter, options.tier, options.seed, options.cases);
  PrintTable(table);
  return kExitHeld;
}

}  // namespace

Command AddBenchCommand(CLI::App& program) {
  auto options = std::make_shared<BenchOptions>();
  CLI::App* app = program.add_subcommand("bench", "Time each law's checks on one adapter (cases/s, µs per case)");
  CLI::Option* adapter =
      app->add_option("--adapter,-a", options->adapter,
                      "Adapter to time (--kill: adapters or a pattern, default 'mutant:*')")
          ->capture_default_str();
  app->add_option("--law,-l", options->laws, "Law to time, or a pattern with * (repeatable; default: every law)")
      ->allow_extra_args(false);
  app->add_option("--cases,-n", options->cases, "Cases per law")->capture_default_str()->check(IntIn(0, 1000000000));
  app->add_option("--skip-law", options->skip_laws, "Law not to time, or a pattern with * (repeatable)")
      ->allow_extra_args(false);
  app->add_option("--seed,-s", options->seed, "Seed of the case streams")->capture_default_str()->check(Seed());
  AddShapeLimitOptions(*app, options->limits);
  app->add_option("--tier", options->tier,
                  "Size tier of the cases: declared (the adapter's share), size (every case in the tier), small "
                  "(none)")
      ->capture_default_str()
      ->check(CLI::IsMember({"declared", "size", "small"}));
#ifdef ATTNCHECK_HAVE_BENCHMARK
  app->add_flag("--google-benchmark", options->google_benchmark,
                "Run through Google Benchmark instead (one benchmark per law, cycling over the cases)");
#endif
  app->add_flag("--kill", options->kill,
                "Kill mode: per adapter and seed, run cases (laws interleaved) until the first failure; print the "
                "median cases and seconds to it; exit 1 when an adapter survives a seed");
  app->add_option("--seeds", options->seeds, "--kill: seeds per adapter (--seed, --seed + 1, …)")
      ->capture_default_str()
      ->check(IntIn(1, 1000000));
  app->add_option("--max-cases", options->max_cases, "--kill: cases per seed before the adapter counts as survived")
      ->capture_default_str()
      ->check(IntIn(1, 1000000000));
  app->add_flag("--expected-laws", options->expected_laws,
                "--kill: only each mutant's expected laws (adapters/mutants/mutants.h) instead of every law");
  return {app, [options, adapter] {
            options->adapter_given = adapter->count() > 0;
            return RunBench(*options);
          }};
}

}  // namespace attncheck::cli
