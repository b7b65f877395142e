// The subcommands of the `attncheck` program (DESIGN §8), one file each, and the
// few helpers they share (defined in main.cc). Every user-facing error is thrown
// as InputError and printed once by main with exit code 2.
#pragma once

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
// order, without repeats; every law when `patterns` is empty. An unknown name or a
// pattern matching nothing throws InputError naming the option and the laws.
std::vector<const Law*> ResolveLaws(const std::vector<std::string>& patterns);

// Adapter names for patterns (adapters/registry.h ExpandAdapterPattern; names
// with a scheme prefix such as "exec:" are taken as they are), in the order
// given, without repeats; AdapterNames() when `patterns` is empty.
std::vector<std::string> ResolveAdapters(const std::vector<std::string>& patterns);

// A case file argument: the file itself, `case.json` inside a report folder, or
// the case a corpus sidecar (x.meta.json → x.json) belongs to.
std::string ResolveCaseFile(const std::string& path);

// Exit code of a set of verdict counts: the largest exit weight of the outcomes seen
// (properties/outcome.h): 3 when any error, else 1 when any failure, else 0.
int ExitCode(int failed, int errors);

}  // namespace attncheck::cli
