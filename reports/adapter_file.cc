// The file an adapter from outside the program runs, and the names that run it
// from elsewhere (see adapter_file.h).
#include "reports/adapter_file.h"

#include <array>
#include <filesystem>

#include "reports/replay_command.h"

namespace attncheck {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kIsolated = "isolated:";
constexpr std::string_view kPlugin = "plugin:";
constexpr std::string_view kExec = "exec:";

bool RegularFile(const std::string& path) {
  std::error_code ignored;
  return fs::is_regular_file(path, ignored);
}

// A program the system provides (an interpreter), not the user's backend.
bool SystemProgram(std::string_view path) {
  static constexpr std::array<std::string_view, 5> kFolders = {"/usr/", "/bin/", "/sbin/", "/lib", "/etc/"};
  for (std::string_view folder : kFolders)
    if (path.starts_with(folder)) return true;
  return false;
}

// A word the shell reads as it is written (no quoting, expansion or redirection).
bool PlainWord(std::string_view word) {
  return word.find_first_of("'\"\\$`*?[]{}<>|;&()~#") == std::string_view::npos;
}

}  // namespace

std::string RunAs(std::string_view adapter, bool in_process) {
  if (in_process || !adapter.starts_with(kPlugin)) return std::string(adapter);
  return std::string(kIsolated) + std::string(adapter);
}

std::string_view Isolation(std::string_view run_as) {
  return run_as.starts_with(kIsolated) || run_as.starts_with(kExec) ? "isolated" : "in-process";
}

std::optional<AdapterFile> FindAdapterFile(std::string_view adapter) {
  size_t at = adapter.starts_with(kIsolated) ? kIsolated.size() : 0;
  const std::string_view name = adapter.substr(at);
  if (name.starts_with(kPlugin)) {
    if (name.size() == kPlugin.size()) return std::nullopt;
    return AdapterFile{std::string(name.substr(kPlugin.size())), at + kPlugin.size()};
  }
  if (!name.starts_with(kExec)) return std::nullopt;
  at += kExec.size();
  const std::string_view command = adapter.substr(at);
  std::optional<AdapterFile> program;
  for (size_t start = 0, word = 0; start < command.size(); ++word) {
    start = command.find_first_not_of(" \t", start);
    if (start == std::string_view::npos) break;
    const size_t end = std::min(command.find_first_of(" \t", start), command.size());
    const std::string token(command.substr(start, end - start));
    if (word == 0 && token.find('=') != std::string::npos) {  // VAR=value before the program
      word = static_cast<size_t>(-1);
    } else if (PlainWord(token) && RegularFile(token)) {
      if (word > 0) return AdapterFile{token, at + start};
      if (token.find('/') != std::string::npos && !SystemProgram(token)) program = AdapterFile{token, at + start};
    }
    start = end;
  }
  return program;
}

std::string WithAdapterFile(std::string_view adapter, const AdapterFile& file, std::string_view path) {
  const std::string_view name = adapter.starts_with(kIsolated) ? adapter.substr(kIsolated.size()) : adapter;
  const std::string written = name.starts_with(kExec) ? ShellQuoted(path) : std::string(path);
  std::string renamed(adapter);
  return renamed.replace(file.at, file.path.size(), written);
}

std::string WithAdapterFile(std::string_view adapter, std::string_view path) {
  const std::optional<AdapterFile> file = FindAdapterFile(adapter);
  return file ? WithAdapterFile(adapter, *file, path) : std::string(adapter);
}

std::string WithAbsoluteAdapterFile(std::string_view adapter) {
  const std::optional<AdapterFile> file = FindAdapterFile(adapter);
  if (!file) return std::string(adapter);
  std::error_code error;
  const fs::path absolute = fs::absolute(file->path, error);
  if (error) return std::string(adapter);
  return WithAdapterFile(adapter, absolute.lexically_normal().string());
}

}  // namespace attncheck
