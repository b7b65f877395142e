// Parser target for the case-file reader (cases/case_json.h): any bytes go
// through ParseCaseText, the text half of ReadCaseFile (JSON parse, then the
// strict FromJson).
// Rejecting bad input with InputError is the reader's job; any other exception,
// a crash or a sanitizer report is a finding. A case it accepts must survive
// ToJson → FromJson unchanged and be valid.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "cases/case_json.h"
#include "cases/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using nlohmann::json;
  attncheck::Case c;
  try {
    c = attncheck::ParseCaseText(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz-input");
  } catch (const attncheck::InputError&) {
    return 0;  // rejected with a clear message: the expected outcome
  }
  if (const std::optional<std::string> problem = attncheck::Validate(c)) {
    std::fprintf(stderr, "FromJson accepted an invalid case: %s\n", problem->c_str());
    std::abort();
  }
  const json again = attncheck::ToJson(c);
  attncheck::Case back;
  try {
    back = attncheck::FromJson(again, "round-trip");
  } catch (const attncheck::InputError& e) {
    std::fprintf(stderr, "ToJson wrote what FromJson rejects: %s\n%s\n", e.what(), again.dump().c_str());
    std::abort();
  }
  if (!(back == c)) {
    std::fprintf(stderr, "ToJson → FromJson changed the case:\n%s\n%s\n", again.dump().c_str(),
                 attncheck::ToJson(back).dump().c_str());
    std::abort();
  }
  return 0;
}
