// The subcommands of the `attncheck` program (DESIGN §8), one file each, and the
// few helpers they share (defined in main.cc). Every user-facing error is thrown
// as InputError and printed once by main with exit code 2.
#pragma once

#include <charconv>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "cases/random_source.h"  // LawStreamSeed
#include "cases/text.h"           // FirstLine
#include "properties/laws.h"
#include "properties/verdict.h"

namespace attncheck::cli {

// Exit codes (DESIGN §8).
inline constexpr int kExitHeld = 0;      // every law held (skips are fine)
inline constexpr int kExitFailed = 1;    // a law failed
inline constexpr int kExitUsage = 2;     // bad usage or bad input
inline constexpr int kExitError = 3;     // an adapter crashed, hung or answered garbage

// A subcommand: registered on the program; `run` is called once it is parsed and
// returns the exit code.
struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

Command AddListCommand(CLI::App& program);
Command AddShowCommand(CLI::App& program);
Command AddGateCommand(CLI::App& program);
Command AddReplayCommand(CLI::App& program);
Command AddBenchCommand(CLI::App& program);
Command AddShrinkCommand(CLI::App& program);  // cli/shrink.cc
Command AddFuzzCommand(CLI::App& program);   // cli/fuzz.cc
Command AddMergeCommand(CLI::App& program);  // cli/merge.cc
Command AddProbeCommand(CLI::App& program);  // cli/probe.cc

// ---- option validators with one-line messages ----

// An integer in [lo, hi].
inline CLI::Validator IntIn(int64_t lo, int64_t hi) {
  return CLI::Validator(
      [lo, hi](std::string& text) -> std::string {
        int64_t value = 0;
        if (!CLI::detail::lexical_cast(text, value) || value < lo || value > hi) {
          return "expected an integer from " + std::to_string(lo) + " to " + std::to_string(hi) + ", got '" +
                 text + "'";
        }
        return {};
      },
      "INT in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
}

// A seed: a decimal integer from 0 to 2^64 − 1 (no sign, no wrap-around).
inline CLI::Validator Seed() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        uint64_t value = 0;
        const char* end = text.data() + text.size();
        const std::from_chars_result read = std::from_chars(text.data(), end, value);
        if (text.empty() || text.front() < '0' || text.front() > '9' || read.ec != std::errc() || read.ptr != end) {
          return "expected an integer from 0 to 18446744073709551615, got '" + text + "'";
        }
        return {};
      },
      "INT in [0, 2^64 - 1]");
}

// A number of seconds > 0.
inline CLI::Validator PositiveSeconds() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        double value = 0.0;
        if (!CLI::detail::lexical_cast(text, value) || !(value > 0.0)) {
          return "expected a number of seconds > 0, got '" + text + "'";
        }
        return {};
      },
      "SECONDS > 0");
}

// ---- shared helpers (main.cc) ----

// The attncheck version string.
std::string_view Version();

// Laws named by patterns (`*` and `?` globs against AllLaws() names), in table
// order, without repeats; every law when `patterns` is empty; less the laws that
// `skip` names (--skip-law, same patterns). An unknown name or a pattern matching
// nothing throws InputError naming the option and the closest law; so does a
// `skip` that leaves no law.
std::vector<const Law*> ResolveLaws(const std::vector<std::string>& patterns,
                                    const std::vector<std::string>& skip = {});

// Adapter names for patterns (adapters/registry.h ExpandAdapterPattern; names
// with a scheme prefix such as "exec:" are taken as they are), in the order
// given, without repeats; AdapterNames() when `patterns` is empty.
std::vector<std::string> ResolveAdapters(const std::vector<std::string>& patterns);

// A case file argument: the file itself, `case.json` inside a report folder, or
// the case a corpus sidecar (x.meta.json → x.json) belongs to.
std::string ResolveCaseFile(const std::string& path);

// A CLI11 parse error as one line (cli/usage_error.cc): an unknown subcommand or
// option gets "unknown option '--sed'; did you mean '--seed'? (attncheck gate --help
// shows all)"; other errors CLI11's first line and "(see --help)".
std::string UsageError(CLI::App& program, const CLI::ParseError& error);

// Exit code of a set of verdict counts: the largest exit weight of the outcomes seen
// (properties/outcome.h): 3 when any error, else 1 when any failure (or any hazard
// under HazardPolicy::kFail), else 0.
int ExitCode(int failed, int errors, int hazards = 0, HazardPolicy policy = HazardPolicy::kReport);

// `--hazards report|fail` on a subcommand: whether a hazard fails the run.
void AddHazardsOption(CLI::App* app, HazardPolicy* policy);

}  // namespace attncheck::cli
