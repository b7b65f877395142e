// The process-wide list of library versions (library_versions.h).
#include "adapters/library_versions.h"

#include <algorithm>
#include <mutex>

namespace attncheck {
namespace {

std::mutex& Mutex() {
  static std::mutex mutex;
  return mutex;
}
std::vector<std::pair<std::string, std::string>>& Versions() {
  static auto* versions = new std::vector<std::pair<std::string, std::string>>;  // never destroyed
  return *versions;
}

}  // namespace

void NoteLibraryVersion(std::string_view library, std::string_view version) {
  const std::lock_guard<std::mutex> lock(Mutex());
  auto& versions = Versions();
  const bool known = std::any_of(versions.begin(), versions.end(), [&](const auto& v) { return v.first == library; });
  if (!known) versions.emplace_back(std::string(library), std::string(version));
}

std::vector<std::pair<std::string, std::string>> LibraryVersions() {
  const std::lock_guard<std::mutex> lock(Mutex());
  return Versions();
}

}  // namespace attncheck
