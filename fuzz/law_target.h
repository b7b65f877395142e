// The law fuzz targets (DESIGN §3, §9): fuzzer bytes → FdpSource → the one
// Decode, inside the capabilities of the adapter under test → check_<law>.
// fuzz/law_entry.cc is compiled once per law (ATTNCHECK_FUZZ_LAW="gqa", …) into
// a libFuzzer target, and into a *_replay executable with fuzz/replay_main.cc.
//
// The adapter is ATTNCHECK_FUZZ_ADAPTER from the environment, else the
// build-time ATTNCHECK_FUZZ_DEFAULT_ADAPTER, else "eigen". "mutant:auto" names
// the first mutant whose listed laws include the target's law (a planted bug
// the target exists to find). A failing (or erroring) verdict writes the
// decoded case as a corpus entry to ATTNCHECK_FUZZ_OUT (default: the current
// folder), prints the verdict and aborts, so libFuzzer keeps the input.
// A case the adapter does not support, or a skip, returns -1 (libFuzzer keeps
// no such input in its corpus).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "cases/capabilities.h"

namespace attncheck::fuzz {

// Runs one input against `law`; 0 when the law held, -1 when the case was
// skipped. Aborts on a failure (after writing the case).
int RunLawTarget(std::string_view law, const uint8_t* data, size_t size);

// The adapter name the targets use for `law` (the environment and build-time
// choice above, with "mutant:auto" resolved).
std::string FuzzAdapterName(std::string_view law);

// Capabilities the targets decode inside: the adapter's, narrowed to small
// shapes when ATTNCHECK_FUZZ_SMALL=1 (batch 2, heads 2, tokens 8, head dim 8),
// the sizes a shrunk failure has.
Capabilities FuzzCapabilities(Capabilities caps);

}  // namespace attncheck::fuzz
