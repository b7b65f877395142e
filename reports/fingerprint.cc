// The machine and library fingerprint (see fingerprint.h).
#include "reports/fingerprint.h"

#include <sys/utsname.h>

#include <fstream>
#include <thread>

#include <fmt/format.h>

#include "adapters/library_versions.h"

#ifndef ATTNCHECK_FINGERPRINT_VERSION
#define ATTNCHECK_FINGERPRINT_VERSION "unknown"
#endif
#ifndef ATTNCHECK_FINGERPRINT_GIT_COMMIT
#define ATTNCHECK_FINGERPRINT_GIT_COMMIT "unknown"
#endif
#ifndef ATTNCHECK_FINGERPRINT_BUILD_TYPE
#define ATTNCHECK_FINGERPRINT_BUILD_TYPE "unknown"
#endif

namespace attncheck {
namespace {

std::string Trimmed(std::string s) {
  const size_t first = s.find_first_not_of(" \t\"");
  if (first == std::string::npos) return "";
  const size_t last = s.find_last_not_of(" \t\"\r");
  return s.substr(first, last - first + 1);
}

// The value of the first `key<sep>value` line of a file ("" when absent).
std::string FileValue(const char* path, std::string_view key, char separator) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    const size_t at = line.find(separator);
    if (at == std::string::npos) continue;
    if (Trimmed(line.substr(0, at)) == key) return Trimmed(line.substr(at + 1));
  }
  return "";
}

Fingerprint Measure() {
  Fingerprint f;
  f.version = ATTNCHECK_FINGERPRINT_VERSION;
  f.git_commit = ATTNCHECK_FINGERPRINT_GIT_COMMIT;
  f.build_type = ATTNCHECK_FINGERPRINT_BUILD_TYPE;
#if defined(__clang__)
  f.compiler = fmt::format("clang {}.{}.{}", __clang_major__, __clang_minor__, __clang_patchlevel__);
#elif defined(__GNUC__)
  f.compiler = fmt::format("gcc {}.{}.{}", __GNUC__, __GNUC_MINOR__, __GNUC_PATCHLEVEL__);
#else
  f.compiler = "unknown compiler";
#endif
  std::string cpu = FileValue("/proc/cpuinfo", "model name", ':');
  if (cpu.empty()) cpu = "unknown CPU";
  f.cpu = fmt::format("{} ({} logical CPUs)", cpu, std::thread::hardware_concurrency());
  f.os = FileValue("/etc/os-release", "PRETTY_NAME", '=');
  if (f.os.empty()) f.os = "unknown OS";
  struct utsname u {};
  // The kernel's major.minor only: enough to compare machines, without the
  // distribution- or host-specific build suffix.
  std::string release = uname(&u) == 0 ? u.release : "";
  if (size_t first = release.find('.'); first != std::string::npos) {
    const size_t second = release.find_first_not_of("0123456789", first + 1);
    if (second != std::string::npos) release.resize(second);
  }
  f.kernel = uname(&u) == 0 ? fmt::format("{} {} {}", u.sysname, release, u.machine) : "unknown";
  return f;
}

}  // namespace

// The libraries under test this process talked to (adapters/library_versions.h),
// "onnxruntime 1.30.0, …"; empty when none said.
namespace {
std::string Libraries() {
  std::string text;
  for (const auto& [library, version] : LibraryVersions()) text += (text.empty() ? "" : ", ") + library + " " + version;
  return text;
}
}  // namespace

std::vector<std::pair<std::string, std::string>> Fingerprint::Fields() const {
  std::vector<std::pair<std::string, std::string>> fields = {
      {"attncheck version", version}, {"git commit", git_commit}, {"build type", build_type},
      {"compiler", compiler},         {"CPU", cpu},               {"OS", os},
      {"kernel", kernel}};
  if (const std::string libraries = Libraries(); !libraries.empty()) fields.emplace_back("libraries", libraries);
  return fields;
}

std::string Fingerprint::Line() const {
  const std::string libraries = Libraries();
  return fmt::format("attncheck {} ({}, {}, {}); {}; {}; CPU {}{}", version, git_commit, build_type, compiler, os,
                     kernel, cpu, libraries.empty() ? "" : "; " + libraries);
}

const Fingerprint& ThisMachine() {
  static const Fingerprint fingerprint = Measure();
  return fingerprint;
}

}  // namespace attncheck
