// What the tests that run the `attncheck` binary share: a scratch folder per test,
// running the program with its output captured, and reading files back.
#pragma once

#include <stdlib.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace attncheck::test {

namespace fs = std::filesystem;

struct CliRun {
  int code = -1;  // exit code; −1 when killed by a signal
  std::string out, err;
};

inline std::string ReadText(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The lines of a text; empty lines are kept unless `skip_empty`.
inline std::vector<std::string> Lines(const std::string& text, bool skip_empty = false) {
  std::vector<std::string> lines;
  std::stringstream stream(text);
  for (std::string line; std::getline(stream, line);) {
    if (!skip_empty || !line.empty()) lines.push_back(line);
  }
  return lines;
}

// One shell word, single-quoted.
inline std::string Quoted(const std::string& s) {
  std::string out = "'";
  for (char ch : s) out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return out + "'";
}

// The shell command running `attncheck <args>` (args are shell words) in `cwd`
// with `env` assignments before it, stdout and stderr to files in `scratch`.
inline std::string AttncheckCommand(const fs::path& scratch, const fs::path& cwd, const std::string& args,
                                    const std::string& env = "") {
  return "cd " + Quoted(cwd.string()) + " && exec " + (env.empty() ? "" : "env " + env + " ") + Quoted(ATTNCHECK_BINARY) +
         " " + args + " >" + Quoted((scratch / "stdout.txt").string()) + " 2>" +
         Quoted((scratch / "stderr.txt").string()) + " </dev/null";
}

inline CliRun RunAttncheck(const fs::path& scratch, const fs::path& cwd, const std::string& args,
                           const std::string& env = "") {
  const int status = std::system(AttncheckCommand(scratch, cwd, args, env).c_str());
  CliRun run;
  run.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  run.out = ReadText(scratch / "stdout.txt");
  run.err = ReadText(scratch / "stderr.txt");
  return run;
}

// Every byte of every file under `dir`, by relative path (folders as "<folder>").
inline std::map<std::string, std::string> Snapshot(const fs::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    const std::string name = fs::relative(entry.path(), dir).string();
    files[name] = entry.is_regular_file() ? ReadText(entry.path()) : std::string("<folder>");
  }
  return files;
}

// The paths whose bytes differ between two snapshots, or that only one has.
inline std::vector<std::string> ChangedPaths(const std::map<std::string, std::string>& before,
                                             const std::map<std::string, std::string>& after) {
  std::vector<std::string> changed;
  for (const auto& [name, bytes] : before) {
    const auto it = after.find(name);
    if (it == after.end() || it->second != bytes) changed.push_back(name);
  }
  for (const auto& entry : after)
    if (!before.contains(entry.first)) changed.push_back(entry.first);
  return changed;
}

// A fixture with a fresh scratch folder `dir_`, removed after the test.
class ScratchDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "attncheck-test-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }
  // Runs `attncheck <args>` inside the scratch folder.
  CliRun Run(const std::string& args) { return RunAttncheck(dir_, dir_, args); }

  fs::path dir_;
};

// One line on stderr, "attncheck: …" (the program's one form of a user error).
inline void ExpectOneErrorLine(const CliRun& run, const std::string& context = "") {
  EXPECT_EQ(Lines(run.err).size(), 1u) << context << "\n" << run.err;
  EXPECT_EQ(run.err.rfind("attncheck: ", 0), 0u) << context << "\n" << run.err;
}

}  // namespace attncheck::test
