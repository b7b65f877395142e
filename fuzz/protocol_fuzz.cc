// libFuzzer target for the process protocol reader (adapters/process/protocol.h):
// any bytes either parse into a message or are rejected with a ProtocolError;
// nothing else may escape, crash or allocate past the stated limits. A parsed
// message must encode back to bytes that parse to the same header and tensors.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "adapters/process/protocol.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace attncheck::process;
  Message m;
  try {
    m = ParseMessage(std::span<const uint8_t>(data, size));
  } catch (const ProtocolError&) {
    return 0;
  }
  const std::vector<uint8_t> again = EncodeMessage(m.header, m.tensors);
  const Message round = ParseMessage(again);
  if (round.header != m.header || round.tensors.size() != m.tensors.size()) std::abort();
  for (size_t i = 0; i < m.tensors.size(); ++i) {
    if (round.tensors[i].bytes != m.tensors[i].bytes || round.tensors[i].shape != m.tensors[i].shape) std::abort();
  }
  return 0;
}
