// One libFuzzer target per law: this file is compiled once for each law with
// -DATTNCHECK_FUZZ_LAW="<law name>" (fuzz/CMakeLists.txt).
#include <cstddef>
#include <cstdint>

#include "fuzz/law_target.h"

#ifndef ATTNCHECK_FUZZ_LAW
#error "compile with -DATTNCHECK_FUZZ_LAW=\"<law name>\""
#endif

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return attncheck::fuzz::RunLawTarget(ATTNCHECK_FUZZ_LAW, data, size);
}
