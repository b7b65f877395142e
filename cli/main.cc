// attncheck: the program (DESIGN §8). Parses the command line (CLI11), runs one
// subcommand, and is the one place user-facing errors are printed: an InputError
// or a usage error becomes "attncheck: <what>" on stderr and exit code 2.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>

#include <fmt/format.h>

#include "adapters/registry.h"
#include "cases/did_you_mean.h"
#include "cases/error.h"
#include "cli/commands.h"
#include "reports/replay_command.h"

#ifndef ATTNCHECK_VERSION
#define ATTNCHECK_VERSION "unknown"
#endif

namespace attncheck::cli {
namespace {

// The laws matching any of `patterns` (globs or names); a pattern matching no law
// throws InputError naming `option` and, for a name, the closest law.
std::set<const Law*> MatchLaws(const std::string& option, const std::vector<std::string>& patterns) {
  std::vector<std::string> names;
  for (const Law& law : AllLaws()) names.emplace_back(law.name);
  std::set<const Law*> chosen;
  for (const std::string& pattern : patterns) {
    const bool wildcard = pattern.find_first_of("*?") != std::string::npos;
    bool matched = false;
    for (const Law& law : AllLaws()) {
      if (wildcard ? GlobMatch(pattern, law.name) : law.name == pattern) {
        matched = true;
        chosen.insert(&law);
      }
    }
    if (!matched) {
      throw InputError::Option(option, wildcard ? fmt::format("no law matches '{}' (attncheck list shows all)", pattern)
                                                : UnknownName("law", pattern, names));
    }
  }
  return chosen;
}

}  // namespace

std::string_view Version() { return ATTNCHECK_VERSION; }

std::vector<const Law*> ResolveLaws(const std::vector<std::string>& patterns, const std::vector<std::string>& skip) {
  const std::set<const Law*> chosen = MatchLaws("--law", patterns);
  const std::set<const Law*> skipped = MatchLaws("--skip-law", skip);
  std::vector<const Law*> laws;
  for (const Law& law : AllLaws()) {
    if ((patterns.empty() || chosen.count(&law) != 0) && skipped.count(&law) == 0) laws.push_back(&law);
  }
  if (laws.empty()) throw InputError::Option("--skip-law", "skips every law chosen, nothing is left to check");
  return laws;
}

std::vector<std::string> ResolveAdapters(const std::vector<std::string>& patterns) {
  if (patterns.empty()) return AdapterNames();
  std::vector<std::string> names;
  auto add = [&](const std::string& name) {
    for (const std::string& n : names) {
      if (n == name) return;
    }
    names.push_back(name);
  };
  for (const std::string& pattern : patterns) {
    // isolated:PATTERN expands the pattern over in-tree adapters (adapters/process).
    if (pattern.starts_with("isolated:") && pattern.find_first_of("*?") != std::string::npos) {
      for (const std::string& name : ExpandAdapterPattern(pattern.substr(9))) add("isolated:" + name);
      continue;
    }
    bool scheme = false;
    for (const AdapterInfo& info : ListAdapters()) {
      if (info.kind == AdapterKind::kScheme && pattern.starts_with(info.name)) scheme = true;
    }
    if (scheme) {
      add(pattern);  // "exec:python3 *.py" is a command, not a pattern
      continue;
    }
    for (const std::string& name : ExpandAdapterPattern(pattern)) add(name);
  }
  return names;
}

std::string ResolveCaseFile(const std::string& path) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) {
    return (std::filesystem::path(path) / "case.json").string();
  }
  // A corpus sidecar names its case: x.meta.json → x.json.
  if (path.ends_with(".meta.json")) return path.substr(0, path.size() - 10) + ".json";
  return path;
}

int ExitCode(int failed, int errors, int hazards, HazardPolicy policy) {
  int code = kExitHeld;
  if (failed > 0) code = std::max(code, ExitWeight(Outcome::kFail));
  if (errors > 0) code = std::max(code, ExitWeight(Outcome::kError));
  if (hazards > 0) code = std::max(code, ExitWeight(Outcome::kHazard, policy));
  return code;
}

void AddHazardsOption(CLI::App* app, HazardPolicy* policy) {
  app->add_option("--hazards", *policy,
                  "What a hazard (behaviour the adapter's contract allows but that is dangerous) does to the "
                  "exit code: report (exit 0) or fail (exit 1)")
      ->transform(CLI::CheckedTransformer(
          std::map<std::string, HazardPolicy>{{"report", HazardPolicy::kReport}, {"fail", HazardPolicy::kFail}}))
      ->default_str("report");
}

}  // namespace attncheck::cli

int main(int argc, char** argv) {
  using namespace attncheck;
  using namespace attncheck::cli;
  CLI::App program{
      "attncheck: correctness gate and fuzzing harness for attention masks and positional "
      "encodings.\nExit codes: 0 every law held, 1 a law failed, 2 bad usage or input, "
      "3 an adapter crashed or answered garbage.",
      "attncheck"};
  SetAttncheckBinary(RealProgramPath(argc > 0 ? argv[0] : nullptr));  // for the replay commands of reports
  program.set_version_flag("--version", std::string(Version()), "Print the version and exit");
  program.require_subcommand(1);
  const std::vector<Command> commands = {AddListCommand(program), AddShowCommand(program),
                                         AddGateCommand(program), AddReplayCommand(program),
                                         AddBenchCommand(program),
                                         AddShrinkCommand(program),
                                         AddFuzzCommand(program), AddMergeCommand(program),
                                         AddProbeCommand(program)};
  try {
    program.parse(argc, argv);
    for (const Command& command : commands) {
      if (command.app->parsed()) return command.run();
    }
    return kExitUsage;
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) {
      return program.exit(e);  // --help, --version
    }
    fmt::print(stderr, "attncheck: {}\n", UsageError(program, e));
    return kExitUsage;
  } catch (const InputError& e) {
    fmt::print(stderr, "attncheck: {}\n", FirstLine(e.what()));
    return kExitUsage;
  } catch (const std::filesystem::filesystem_error& e) {
    fmt::print(stderr, "attncheck: {}\n", FirstLine(e.what()));
    return kExitUsage;
  } catch (const std::exception& e) {
    fmt::print(stderr, "attncheck: internal error: {}\n", FirstLine(e.what()));
    return kExitError;
  }
}
