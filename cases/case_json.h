// JSON form of a Case: the durable format of corpora and reports (DESIGN §3).
// Reading is strict: unknown keys, wrong types and invalid cases throw
// InputError naming the file and the field ("rows[1].documents[0]").
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "cases/case.h"

namespace attncheck {

nlohmann::json ToJson(const Case& c);
Case FromJson(const nlohmann::json& j, const std::string& file = "");
// The `encoding` object alone, as a case file writes it (the process protocol's
// requests carry it); reading throws InputError naming `file` and the field.
nlohmann::json ToJson(const EncodingSpec& e);
EncodingSpec EncodingSpecFromJson(const nlohmann::json& j, const std::string& file = "");

Case ReadCaseFile(const std::string& path);
// The text of a case file (what ReadCaseFile reads); `file` names it in errors.
// Anything but a valid case throws InputError (invalid JSON included).
Case ParseCaseText(std::string_view text, const std::string& file);
// Atomic write: temp file in the same folder + rename.
void WriteCaseFile(const std::string& path, const Case& c);
// Same atomic write for any text.
void WriteFileAtomic(const std::string& path, const std::string& text);

}  // namespace attncheck
