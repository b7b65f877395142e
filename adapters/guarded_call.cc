// GuardedCall: declared buffers, and the checks Run makes after the adapter call
// (outputs first, then inputs, each in declaration order, as the fault text lists them).
#include "adapters/guarded_call.h"

#include <exception>

#include <fmt/format.h>

namespace attncheck {

void CallFaults::RecordThrown() {
  try {
    throw;
  } catch (const AdapterError& e) {
    messages.push_back(e.what());
    thrown = e.fault();
    return;
  } catch (const std::exception& e) {
    messages.push_back(fmt::format("adapter threw: {}", e.what()));
  } catch (...) {
    messages.push_back("adapter threw a non-standard exception");
  }
  thrown = AdapterFault::kException;
}

std::span<const float> GuardedCall::Input(std::string_view name, std::span<const float> values) {
  return std::get<guarded::Guarded<float>>(buffers_.emplace_back(std::in_place_index<0>, name, values)).cbody();
}

std::span<const int> GuardedCall::Input(std::string_view name, std::span<const int> values) {
  return std::get<guarded::Guarded<int>>(buffers_.emplace_back(std::in_place_index<1>, name, values)).cbody();
}

std::span<const uint8_t> GuardedCall::Input(std::string_view name, std::span<const uint8_t> values) {
  return std::get<guarded::Guarded<uint8_t>>(buffers_.emplace_back(std::in_place_index<2>, name, values)).cbody();
}

std::span<float> GuardedCall::Output(std::string_view name, size_t n) {
  return std::get<guarded::Guarded<float>>(buffers_.emplace_back(std::in_place_index<0>, name, n)).body();
}

void GuardedCall::Check(bool threw, std::vector<std::string>& faults) const {
  for (const auto& buffer : buffers_) {
    if (const auto* out = std::get_if<guarded::Guarded<float>>(&buffer); out != nullptr && out->output()) {
      out->CheckOutput(faults, threw);
    }
  }
  for (const auto& buffer : buffers_) {
    std::visit([&](const auto& in) { if (!in.output()) in.CheckInput(faults); }, buffer);
  }
}

}  // namespace attncheck
