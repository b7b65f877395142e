// One adapter call over guarded buffers (DESIGN §5): the caller declares each
// named input (its values) and output (its size), gets the guarded spans to hand
// over, and Run checks every declared buffer after the call, so no check can be left out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "adapters/adapter_fault.h"
#include "adapters/guarded_buffer.h"

namespace attncheck {

// The faults of one harness run, over all its adapter calls, in the order found.
struct CallFaults {
  std::vector<std::string> messages;
  // the class of an exception a call threw: an AdapterError says its own
  // (crash, timeout, garbage), anything else is kException; kNone when none threw
  AdapterFault thrown = AdapterFault::kNone;

  bool empty() const { return messages.empty(); }
  // Records the exception in flight (call inside a catch block) as a fault.
  void RecordThrown();
};

class GuardedCall {
 public:
  GuardedCall() { buffers_.reserve(8); }

  // A named input holding `values`; they must outlive the call (the snapshot the
  // unchanged-input check compares against). Returns the guarded copy to hand over.
  std::span<const float> Input(std::string_view name, std::span<const float> values);
  std::span<const int> Input(std::string_view name, std::span<const int> values);
  std::span<const uint8_t> Input(std::string_view name, std::span<const uint8_t> values);
  // A named output of n floats, every element the unwritten sentinel until the
  // adapter writes it; readable through the span after Run.
  std::span<float> Output(std::string_view name, size_t n);

  // Runs the adapter call, then checks every declared buffer: the outputs (guard
  // margins, and every element written unless the call threw), then the inputs
  // (guard margins, values unchanged), each in the order declared. An exception
  // is recorded in `faults` first; the checks run after it all the same.
  // A refusal that also broke the buffer contract counts as the broken contract.
  template <class AdapterCall>
  void Run(AdapterCall&& call, CallFaults& faults) {
    bool threw = false;
    const size_t before = faults.messages.size();
    try {
      call();
    } catch (...) {
      faults.RecordThrown();
      threw = true;
    }
    Check(threw, faults.messages);
    if (faults.thrown == AdapterFault::kRefused && faults.messages.size() > before + 1) {
      faults.thrown = AdapterFault::kContract;
    }
  }

 private:
  void Check(bool threw, std::vector<std::string>& faults) const;

  std::vector<std::variant<guarded::Guarded<float>, guarded::Guarded<int>, guarded::Guarded<uint8_t>>> buffers_;
};

}  // namespace attncheck
