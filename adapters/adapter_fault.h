// How an adapter call went wrong, as the harness classifies it (DESIGN §5): a
// broken buffer contract (a law failure of its own: memory safety), or an error
// that is the adapter's, not a law's — it threw, crashed (a signal in an isolated
// child), hung past the per-call time limit, or answered garbage (a malformed
// protocol message, an output of the wrong shape). Adapters that run elsewhere
// (adapters/process) throw AdapterError to say which. A kernel may also refuse one
// case (CaseRefused): a skip with its reason, neither an error nor a failure.
#pragma once

#include <stdexcept>
#include <string>

namespace attncheck {

enum class AdapterFault { kNone, kContract, kException, kCrash, kTimeout, kGarbage, kRefused };

class AdapterError : public std::runtime_error {
 public:
  AdapterError(AdapterFault fault, const std::string& what) : std::runtime_error(what), fault_(fault) {}
  AdapterFault fault() const { return fault_; }

 private:
  AdapterFault fault_;
};

// The kernel does not take this case (a shape or layout it has no path for; the
// plugin ABI's ATTNCHECK_REFUSED): the law's verdict is a skip, "refused: <reason>".
class CaseRefused : public AdapterError {
 public:
  explicit CaseRefused(const std::string& reason)
      : AdapterError(AdapterFault::kRefused, "refused: " + reason), reason_(reason) {}
  const std::string& reason() const { return reason_; }

 private:
  std::string reason_;
};

}  // namespace attncheck
