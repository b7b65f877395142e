// The checks shared by the real libraries' tests (tests/onnxruntime_test.cc, torch_test.cc,
// jax_test.cc, transformers_test.cc, openvino_test.cc, ort_python_test.cc): a gate's summary fails only with the
// causes FINDINGS.md classifies; adapters without their library are listed as unavailable with
// the reason; a defect planted in a backend fails.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "adapters/python_backend.h"
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

// Three laws of `adapters` (a pattern) at `cases` cases in `dir`, classified as above (exit 3 only
// with `known_errors`). Three, not every law: each law × adapter pair starts its own Python
// backend (importing the library).
inline void ExpectClassifiedShortGate(const std::filesystem::path& dir, const std::string& adapters, int cases,
                                      const KnownFails& known, const KnownFails& known_errors = {}) {
  const CliRun run = RunAttncheck(dir, dir,
                                  "gate --adapter " + Quoted(adapters) + " --cases " + std::to_string(cases) +
                                      " --law non-interference --law masked-rows --law reference-agreement"
                                      " --seed 3 --json gate.json");
  // exit 3 (an adapter error) only where errors are expected; the summary then names each one
  ASSERT_TRUE(run.code == 0 || run.code == 1 || (run.code == 3 && !known_errors.empty()))
      << run.code << "\n" << run.out << run.err;
  ExpectClassifiedSummary(dir / "gate.json", known, known_errors);
}

// The environment that lists every Python library's adapters but `keep`'s as unavailable, so
// `attncheck list` (which starts each listed process adapter for its capabilities) starts only
// the backends a test reads.
// The same with every Python library unavailable (keep = none), for a test of another part.
inline std::string OtherPythonLibrariesUnavailable(const PythonLibrary& keep = {}) {
  std::string env;
  for (const PythonLibrary* library :
       {&kTorchLibrary, &kTorchCudaLibrary, &kJaxLibrary, &kTransformersLibrary, &kOpenVinoLibrary,
        &kOrtPythonLibrary}) {
    if (library->python_env != keep.python_env) env += std::string(library->python_env) + "=/nonexistent ";
  }
  return env;
}

// A case file `case_json` replayed under `law` on the exec: adapter `backend` passes, without a
// skip (the form reached the kernel), and fails with `planted` (a flag that plants a one-line
// defect in the backend) added to its command.
inline void ExpectPlantedDefectFails(const std::filesystem::path& dir, const std::string& case_json,
                                     const std::string& law, const std::string& backend, const std::string& planted) {
  {
    std::ofstream(dir / "planted.json") << case_json;
  }
  const std::string env = "ATTNCHECK_CALL_TIMEOUT=60";  // the exec: form has the plain 10 s limit
  const CliRun good = RunAttncheck(dir, dir, "replay planted.json --law " + law + " --adapter " + Quoted(backend), env);
  EXPECT_EQ(good.code, 0) << good.out << good.err;
  EXPECT_EQ(good.out.find("skip"), std::string::npos) << good.out;
  const CliRun bad = RunAttncheck(dir, dir, "replay planted.json --law " + law + " --adapter " +
                                                Quoted(backend + " " + planted), env);
  EXPECT_EQ(bad.code, 1) << bad.out << bad.err;
}

// Under `env` (a Python without the library): `attncheck list` (run under `env` and
// `list_env`) shows every adapter of `table` as unavailable with `reason`, and naming the
// first one or `pattern` is a usage error (exit 2, one line naming the install step).
template <class Table>
void ExpectUnavailable(const std::filesystem::path& dir, const std::string& env, const std::string& list_env,
                       const Table& table, const std::string& reason, const std::string& pattern) {
  const CliRun list = RunAttncheck(dir, dir, "list", env + " " + list_env);
  ASSERT_EQ(list.code, 0) << list.err;
  for (const auto& known : table) {
    bool found = false;
    for (const std::string& line : Lines(list.out)) {
      if (line.find(std::string(known.name) + " ") == std::string::npos) continue;
      found = true;
      EXPECT_NE(line.find("unavailable: "), std::string::npos) << line;
      EXPECT_NE(line.find(reason), std::string::npos) << line;
    }
    EXPECT_TRUE(found) << known.name << " not listed:\n" << list.out;
  }
  const CliRun named = RunAttncheck(dir, dir, "gate --adapter " + std::string(table[0].name) + " --cases 1", env);
  EXPECT_EQ(named.code, 2) << named.out;
  ExpectOneErrorLine(named);
  EXPECT_NE(named.err.find("--with-python"), std::string::npos) << named.err;
  const CliRun all = RunAttncheck(dir, dir, "gate --adapter " + Quoted(pattern) + " --cases 1", env);
  EXPECT_EQ(all.code, 2) << all.out;
}

}  // namespace attncheck::test
