// Replay commands with the binary's real path, the folder-relative form and the
// behaviour-changing environment (see replay_command.h).
#include "reports/replay_command.h"

#include <cctype>
#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

namespace attncheck {
namespace {

bool ShellSafe(std::string_view s) {
  if (s.empty()) return false;
  for (char ch : s) {
    const unsigned char u = static_cast<unsigned char>(ch);
    if (!(std::isalnum(u) || ch == '_' || ch == '-' || ch == '.' || ch == '/' || ch == ':' ||
          ch == '=' || ch == '+' || ch == ',' || ch == '@' || ch == '%')) {
      return false;
    }
  }
  return true;
}

std::string& Binary() {
  static std::string binary = "attncheck";
  return binary;
}

// The environment of the run, as shell assignments before a command.
std::string EnvironmentPrefix() {
  std::string prefix;
  for (const auto& [name, value] : BehaviourEnvironment()) prefix += name + "=" + ShellQuoted(value) + " ";
  return prefix;
}

std::string ReplayArguments(std::string_view case_file, std::string_view adapter, std::string_view law) {
  return fmt::format("replay {} --adapter {} --law {}", ShellQuoted(case_file), ShellQuoted(adapter),
                     ShellQuoted(law));
}

}  // namespace

std::string ShellQuoted(std::string_view s) {
  if (ShellSafe(s)) return std::string(s);
  std::string out = "'";
  for (char ch : s) {
    if (ch == '\'') {
      out += "'\\''";
    } else {
      out += ch;
    }
  }
  return out + "'";
}

void SetAttncheckBinary(std::string path) { Binary() = std::move(path); }
const std::string& AttncheckBinary() { return Binary(); }

std::string RealProgramPath(const char* argv0) {
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  if (!error && !self.empty()) return self.string();
  return argv0 != nullptr ? std::string(argv0) : std::string("attncheck");
}

const std::vector<std::pair<std::string_view, std::string_view>>& BehaviourVariables() {
  static const std::vector<std::pair<std::string_view, std::string_view>> variables = {
      {"ATTNCHECK_CALL_TIMEOUT", "seconds an isolated: or exec: adapter call may take (adapters/process)"},
  };
  return variables;
}

std::vector<std::pair<std::string, std::string>> BehaviourEnvironment() {
  std::vector<std::pair<std::string, std::string>> set;
  for (const auto& [name, what] : BehaviourVariables()) {
    if (const char* value = std::getenv(std::string(name).c_str())) set.emplace_back(std::string(name), value);
  }
  return set;
}

std::string ReplayCommand(std::string_view case_file, std::string_view adapter, std::string_view law) {
  std::error_code error;
  std::filesystem::path absolute = std::filesystem::absolute(case_file, error);
  if (error) absolute = case_file;
  return EnvironmentPrefix() + ShellQuoted(AttncheckBinary()) + " " +
         ReplayArguments(absolute.lexically_normal().string(), adapter, law);
}

std::string FolderReplayCommand(std::string_view adapter, std::string_view law) {
  return EnvironmentPrefix() + "attncheck " + ReplayArguments("case.json", adapter, law);
}

}  // namespace attncheck
