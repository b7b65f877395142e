// Versions of the libraries under test that this process has talked to (an ONNX
// Runtime backend's hello names its onnxruntime version), for the report
// fingerprint (reports/fingerprint.h). Thread-safe; first note per library wins.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace attncheck {

void NoteLibraryVersion(std::string_view library, std::string_view version);
// (library, version) in the order first noted.
std::vector<std::pair<std::string, std::string>> LibraryVersions();

}  // namespace attncheck
