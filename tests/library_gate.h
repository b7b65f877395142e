// The short gate of a real library's adapters (tests/onnxruntime_test.cc, torch_test.cc,
// jax_test.cc): a gate's summary may fail only with the causes FINDINGS.md classifies.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "tests/cli_support.h"

namespace attncheck::test {

// (law, adapter) pairs whose failures FINDINGS.md classifies.
using KnownFails = std::set<std::pair<std::string, std::string>>;

// A gate's --json summary: a failing pair only one of `known`, an adapter error only on a pair
// of `known_errors` (a library throwing on a valid call), hazards only on masked-rows (NaN
// isolation is declared by none of these libraries), a pass at least.
inline void ExpectClassifiedSummary(const std::filesystem::path& json, const KnownFails& known,
                                    const KnownFails& known_errors = {}) {
  const nlohmann::json summary = nlohmann::json::parse(ReadText(json));
  int passed = 0;
  for (const nlohmann::json& r : summary.at("results")) {
    const std::string law = r.at("law"), adapter = r.at("adapter");
    if (r.at("errors").get<int>() > 0) {
      EXPECT_TRUE(known_errors.count({law, adapter})) << law << " × " << adapter << " errors: not a FINDINGS.md cause";
    }
    if (r.at("failed").get<int>() > 0) {
      EXPECT_TRUE(known.count({law, adapter})) << law << " × " << adapter << " failed: not a FINDINGS.md cause";
    }
    if (r.at("hazards").get<int>() > 0) {
      EXPECT_EQ(law, "masked-rows") << adapter;
    }
    passed += r.at("passed").get<int>();
  }
  EXPECT_GT(passed, 0);
}

// Three laws of `adapters` (a pattern) at `cases` cases in `dir`, classified as above. Three,
// not every law: each law × adapter pair starts its own Python backend (importing the library).
inline void ExpectClassifiedShortGate(const std::filesystem::path& dir, const std::string& adapters, int cases,
                                      const KnownFails& known, const KnownFails& known_errors = {}) {
  const CliRun run = RunAttncheck(dir, dir,
                                  "gate --adapter " + Quoted(adapters) + " --cases " + std::to_string(cases) +
                                      " --law non-interference --law masked-rows --law reference-agreement"
                                      " --seed 3 --json gate.json");
  ASSERT_TRUE(run.code == 0 || run.code == 1) << run.code << "\n" << run.out << run.err;
  ExpectClassifiedSummary(dir / "gate.json", known, known_errors);
}

}  // namespace attncheck::test
