// How an adapter call went wrong, as the harness classifies it (DESIGN §5): a
// broken buffer contract (a law failure of its own: memory safety), or an error
// that is the adapter's, not a law's — it threw, crashed (a signal in an isolated
// child), hung past the per-call time limit, or answered garbage (a malformed
// protocol message, an output of the wrong shape). Adapters that run elsewhere
// (adapters/process) throw AdapterError to say which.
#pragma once

#include <stdexcept>
#include <string>

namespace attncheck {

enum class AdapterFault { kNone, kContract, kException, kCrash, kTimeout, kGarbage };

class AdapterError : public std::runtime_error {
 public:
  AdapterError(AdapterFault fault, const std::string& what) : std::runtime_error(what), fault_(fault) {}
  AdapterFault fault() const { return fault_; }

 private:
  AdapterFault fault_;
};

}  // namespace attncheck
