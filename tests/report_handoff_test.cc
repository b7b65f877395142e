// A report folder survives the hand-off (DESIGN §7): it keeps a copy of the
// plugin library it ran and the isolation it ran under, so its printed folder
// command reproduces the failure after the folder is moved and the library is
// gone; a crash replays as a crash verdict; `replay` takes a whole report folder;
// a report for a kernel from outside this tree hands over through the user's
// corpus (attncheck_add_corpus) with installed files only; and a gate that cannot
// start leaves the previous run's report folder untouched.
#include <gtest/gtest.h>

#include <map>
#include <regex>

#include <nlohmann/json.hpp>

#include "tests/cli_support.h"
#include "tests/example_plugins.h"

namespace attncheck::test {
namespace {

const fs::path kPluginDir = ATTNCHECK_EXAMPLE_PLUGIN_DIR;

class ReportHandoff : public ScratchDirTest {
 protected:
  // The failure folders (holding case.json) of a report folder.
  static std::vector<fs::path> FailureFolders(const fs::path& report_dir) {
    std::vector<fs::path> folders;
    for (const auto& entry : fs::directory_iterator(report_dir))
      if (fs::exists(entry.path() / "case.json")) folders.push_back(entry.path());
    std::sort(folders.begin(), folders.end());
    return folders;
  }
  // The command in report.md's fence after `heading`.
  static std::string CommandAfter(const std::string& md, const std::string& heading) {
    const size_t at = md.find(heading);
    EXPECT_NE(at, std::string::npos) << md;
    const size_t open = md.find("```sh\n", at);
    const size_t close = md.find("\n```", open + 6);
    return md.substr(open + 6, close - open - 6);
  }
  // Gates the example plugin with the planted off-by-one, copied to ./libmine.so
  // and named by that relative path.
  CliRun GateRelativePlugin(const std::string& report_dir) {
    fs::copy_file(kPluginDir / "libexample_plugin_off_by_one.so", dir_ / "libmine.so");
    return Run("gate --adapter plugin:./libmine.so --law reference-agreement --cases 20 --seed 1 --quiet "
               "--shrink-seconds 1 --report-dir " + report_dir);
  }
};

TEST_F(ReportHandoff, FolderCommandWorksAfterTheFolderMovesAndTheLibraryIsGone) {
  const CliRun gate = GateRelativePlugin("rep");
  ASSERT_EQ(gate.code, 1) << gate.out << gate.err;
  const std::vector<fs::path> folders = FailureFolders(dir_ / "rep");
  ASSERT_FALSE(folders.empty());
  const nlohmann::json meta = nlohmann::json::parse(ReadText(folders[0] / "meta.json"));
  const std::string library = fs::canonical(dir_ / "libmine.so").string();
  EXPECT_EQ(meta["adapter"], "plugin:./libmine.so");  // as the user named it
  EXPECT_EQ(meta["ran_as"], "isolated:plugin:" + library);
  EXPECT_EQ(meta["isolation"], "isolated");
  EXPECT_EQ(meta["adapter_file"]["path"], library);
  EXPECT_EQ(meta["adapter_file"]["copy"], "libmine.so");
  EXPECT_TRUE(fs::exists(folders[0] / "libmine.so"));

  fs::create_directories(dir_ / "elsewhere");
  fs::rename(dir_ / "rep", dir_ / "elsewhere" / "moved");
  fs::remove(dir_ / "libmine.so");
  const fs::path moved = dir_ / "elsewhere" / "moved" / folders[0].filename();
  const std::string md = ReadText(moved / "report.md");
  std::string command = CommandAfter(md, "From inside this folder");
  EXPECT_NE(command.find("--adapter isolated:plugin:./libmine.so"), std::string::npos) << command;
  ASSERT_EQ(command.rfind("attncheck ", 0), 0u) << command;
  command = Quoted(ATTNCHECK_BINARY) + command.substr(std::string("attncheck").size());
  const std::string shell = "cd " + Quoted(moved.string()) + " && " + command + " >" +
                            Quoted((dir_ / "out.txt").string()) + " 2>&1";
  const int status = std::system(shell.c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 1) << ReadText(dir_ / "out.txt");
  EXPECT_NE(ReadText(dir_ / "out.txt").find("verdict:  fail"), std::string::npos) << ReadText(dir_ / "out.txt");

  // The folder itself, read through its meta.json, runs the copy too.
  const CliRun folder = RunAttncheck(dir_, moved, "replay .");
  EXPECT_EQ(folder.code, 1) << folder.out << folder.err;
}

// An exec: backend named by a script: the folder keeps a copy of the script, and
// its command runs the copy once the original is gone (an adapter error: exit 3).
TEST_F(ReportHandoff, FolderKeepsTheExecScript) {
  fs::copy_file(fs::path(ATTNCHECK_SOURCE_DIR) / "tests/data/process/broken_backend.py", dir_ / "backend.py");
  const CliRun gate = Run("gate --adapter 'exec:python3 backend.py error' --law reference-agreement --cases 2 "
                          "--quiet --no-shrink --report-dir rep");
  ASSERT_EQ(gate.code, 3) << gate.out << gate.err;
  const fs::path folder = FailureFolders(dir_ / "rep").front();
  const nlohmann::json meta = nlohmann::json::parse(ReadText(folder / "meta.json"));
  EXPECT_EQ(meta["ran_as"], "exec:python3 " + fs::canonical(dir_ / "backend.py").string() + " error");
  EXPECT_EQ(meta["isolation"], "isolated");
  EXPECT_EQ(meta["adapter_file"]["copy"], "backend.py");
  ASSERT_TRUE(fs::exists(folder / "backend.py"));
  fs::remove(dir_ / "backend.py");
  const std::string command = CommandAfter(ReadText(folder / "report.md"), "From inside this folder");
  EXPECT_NE(command.find("--adapter 'exec:python3 ./backend.py error'"), std::string::npos) << command;
  const CliRun replay = RunAttncheck(dir_, folder, command.substr(std::string("attncheck ").size()));
  EXPECT_EQ(replay.code, 3) << replay.out << replay.err;
  EXPECT_NE(replay.out.find("cuda out of memory"), std::string::npos) << replay.out;
}

TEST_F(ReportHandoff, ReplayTakesAWholeReportFolder) {
  const CliRun gate = GateRelativePlugin("rep");
  ASSERT_EQ(gate.code, 1) << gate.out << gate.err;
  const size_t folders = FailureFolders(dir_ / "rep").size();
  ASSERT_GT(folders, 0u);
  const CliRun replay = Run("replay rep");
  EXPECT_EQ(replay.code, 1) << replay.out << replay.err;
  size_t replayed = 0;
  for (const std::string& line : Lines(replay.out))
    if (line.starts_with("file:") && line.ends_with("/case.json")) ++replayed;
  EXPECT_EQ(replayed, folders) << replay.out;
  // Not a corpus: summary.json, run.json and meta.json are not read as cases.
  EXPECT_EQ(replay.err.find("summary.json"), std::string::npos) << replay.err;
}

TEST_F(ReportHandoff, ACrashReplaysAsACrashVerdict) {
  const std::string plugin = (kPluginDir / "libexample_plugin_segfault.so").string();
  const CliRun gate = Run("gate --adapter " + Quoted("plugin:" + plugin) +
                          " --law reference-agreement --cases 20 --seed 1 --quiet --no-shrink --report-dir rep");
  ASSERT_EQ(gate.code, 3) << gate.out << gate.err;
  fs::path crash;
  for (const fs::path& folder : FailureFolders(dir_ / "rep")) {
    if (nlohmann::json::parse(ReadText(folder / "meta.json")).value("fault", "") == "crash") crash = folder;
  }
  ASSERT_FALSE(crash.empty());
  EXPECT_EQ(nlohmann::json::parse(ReadText(crash / "meta.json"))["isolation"], "isolated");
  // The folder (its meta.json), and the case with the plugin named as the user named it.
  for (const std::string& args : {"replay " + Quoted(crash.string()),
                                  "replay " + Quoted((crash / "case.json").string()) + " --adapter " +
                                      Quoted("plugin:" + plugin) + " --law reference-agreement"}) {
    const CliRun replay = Run(args);
    EXPECT_EQ(replay.code, 3) << args << "\n" << replay.out << replay.err;
    EXPECT_NE(replay.out.find("verdict:  error"), std::string::npos) << replay.out;
    EXPECT_NE(replay.out.find("fault:    crash"), std::string::npos) << replay.out;
  }
}

// A kernel from outside this tree: the report hands the case to the user's corpus,
// which attncheck_add_corpus replays (`attncheck replay <corpus> --adapter
// isolated:plugin:<library>`), and shows no header that is not installed (the
// install has include/attncheck/adapter.h only).
TEST_F(ReportHandoff, DownstreamReportHandsOverThroughTheUsersCorpus) {
  const CliRun gate = GateRelativePlugin("rep");
  ASSERT_EQ(gate.code, 1) << gate.out << gate.err;
  const fs::path folder = FailureFolders(dir_ / "rep").front();
  const std::string md = ReadText(folder / "report.md");
  EXPECT_EQ(md.find("corpora/regressions"), std::string::npos) << md;
  EXPECT_EQ(md.find("#include"), std::string::npos) << md;
  EXPECT_NE(md.find("attncheck_add_corpus(DIR corpus TARGET mine)"), std::string::npos) << md;
  EXPECT_NE(md.find("find_package(attncheck REQUIRED)"), std::string::npos) << md;
  const std::string html = ReadText(folder / "report.html");
  EXPECT_NE(html.find("attncheck_add_corpus(DIR corpus TARGET mine)"), std::string::npos);
  EXPECT_EQ(html.find("#include"), std::string::npos);

  // The cp line, run as printed: the corpus replays as attncheck_add_corpus runs it.
  const std::smatch cp = [&] {
    std::smatch m;
    static const std::regex line("\ncp (\\S+) corpus/(\\S+\\.json)\n");
    EXPECT_TRUE(std::regex_search(md, m, line)) << md;
    return m;
  }();
  fs::create_directories(dir_ / "corpus");
  ASSERT_EQ(std::system(("cd " + Quoted(dir_.string()) + " && cp " + cp[1].str() + " corpus/" + cp[2].str()).c_str()),
            0);
  const CliRun still_failing = Run("replay corpus --adapter " + Quoted("isolated:plugin:" + (dir_ / "libmine.so").string()));
  EXPECT_EQ(still_failing.code, 1) << still_failing.out << still_failing.err;
  const CliRun fixed = Run("replay corpus --adapter " +
                           Quoted("isolated:plugin:" + (kPluginDir / "libexample_plugin.so").string()));
  EXPECT_EQ(fixed.code, 0) << fixed.out << fixed.err;

  // An in-tree adapter's report keeps our corpus and the gtest draft.
  const CliRun in_tree = Run("gate --adapter mutant:causal-off-by-one --law non-interference --cases 3 --quiet "
                             "--report-dir in-tree");
  ASSERT_EQ(in_tree.code, 1) << in_tree.out << in_tree.err;
  const std::string in_tree_md = ReadText(FailureFolders(dir_ / "in-tree").front() / "report.md");
  EXPECT_NE(in_tree_md.find("corpora/regressions/"), std::string::npos);
  EXPECT_EQ(in_tree_md.find("attncheck_add_corpus"), std::string::npos);
}

TEST_F(ReportHandoff, AGateThatCannotStartLeavesTheReportFolderUntouched) {
  const CliRun first = Run("gate --adapter mutant:causal-off-by-one --law non-interference --cases 3 --quiet "
                           "--report-dir rep");
  ASSERT_EQ(first.code, 1) << first.out << first.err;
  ASSERT_FALSE(FailureFolders(dir_ / "rep").empty());
  const std::map<std::string, std::string> before = Snapshot(dir_ / "rep");
  const CliRun failed = Run("gate --adapter 'exec:false' --cases 3 --quiet --report-dir rep");
  EXPECT_EQ(failed.code, 2) << failed.out << failed.err;
  ExpectOneErrorLine(failed);
  EXPECT_EQ(ChangedPaths(before, Snapshot(dir_ / "rep")), std::vector<std::string>{});
}

}  // namespace
}  // namespace attncheck::test
