// Adapters see only what a kernel sees (issue 14 point 4): no file under adapters/
// reads the Case — its rows, documents, padding or visibility kind — to decide
// visibility. The check is the grep
//   grep -rnE '\bCase\b|\.c->|\bargs_?\.c\b|\ba\.c\b|MakeLayout|TaskVisible|reference/(visibility|scenario)\.h' adapters/
// over every file but the harness side, less the lines declaring unsupported().
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

namespace attncheck {
namespace {

namespace fs = std::filesystem;

const std::regex kReadsCase(
    R"(\bCase\b|\.c->|\bargs_?\.c\b|\ba\.c\b|MakeLayout|TaskVisible|reference/(visibility|scenario)\.h)");

// The harness side, which owns the Case and turns it into what an adapter is
// handed: harness.* and harness_*.* (plans, masks, descriptors, KernelSpec, one driver
// per call), packing.* (its varlen and paged tensor layouts), registry.* / registrar.*
// (adapter names and factories).
bool HarnessSide(const fs::path& file) {
  const std::string stem = file.stem().string();
  return stem == "harness" || stem.starts_with("harness_") || stem == "packing" || stem == "registry" ||
         stem == "registrar";
}

// Adapter::unsupported(const Case&) is the harness's question before any call —
// a SKIP with its reason (DESIGN §5), never an output — so its declarations may
// name the Case.
bool Allowed(const std::string& line) { return line.find("unsupported(const Case") != std::string::npos; }

std::vector<std::string> CaseReaders(const fs::path& root) {
  std::vector<std::string> hits;
  for (const fs::directory_entry& entry : fs::recursive_directory_iterator(root)) {
    if (!entry.is_regular_file() || HarnessSide(entry.path())) continue;
    std::ifstream in(entry.path());
    std::string line;
    for (int number = 1; std::getline(in, line); ++number) {
      if (std::regex_search(line, kReadsCase) && !Allowed(line)) {
        hits.push_back(fs::relative(entry.path(), root.parent_path()).string() + ":" + std::to_string(number) + ": " +
                       line);
      }
    }
  }
  return hits;
}

TEST(AdaptersSeeNoCase, ThePatternFindsWhatItLooksFor) {
  for (const char* line : {"  const Case* c = nullptr;", "  if (call.c->visibility == x)", "EigenRotate(*a.c, 1);",
                           "  p.c = args.c;", "MakeLayout(*c)", "reference::TaskVisible(c, 0, 1, 2, 3, 4)",
                           "#include \"reference/visibility.h\""}) {
    EXPECT_TRUE(std::regex_search(std::string(line), kReadsCase)) << line;
  }
  for (const char* line : {"  KernelSpec spec;", "a.current_length", "// the case's encoding", "args.spec.softcap",
                           "#include \"cases/visibility_descriptor.h\""}) {
    EXPECT_FALSE(std::regex_search(std::string(line), kReadsCase)) << line;
  }
  EXPECT_TRUE(Allowed("  std::optional<std::string> unsupported(const Case& c) const override {"));
}

TEST(AdaptersSeeNoCase, NoAdapterFileReadsTheCase) {
  const fs::path adapters = fs::path(ATTNCHECK_SOURCE_DIR) / "adapters";
  ASSERT_TRUE(fs::is_directory(adapters)) << adapters;
  std::string listed;
  for (const std::string& hit : CaseReaders(adapters)) listed += "\n  " + hit;
  EXPECT_TRUE(listed.empty()) << "files under adapters/ that read the Case:" << listed;
}

}  // namespace
}  // namespace attncheck
