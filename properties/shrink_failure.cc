#include "properties/shrink_failure.h"

#include <exception>
#include <stdexcept>

namespace attncheck {
namespace {

// The same outcome (an error of the same fault class) with the same signature
// (properties/signature.h): a shrink never trades one bug for another.
bool SameFailure(const Law& law, const Case& candidate, const Verdict& a, const Case& failing, const Verdict& b) {
  if (a.outcome != b.outcome) return false;
  if (IsAdapterError(a.outcome) && a.fault != b.fault) return false;
  return SignatureOf(law.name, candidate, a) == SignatureOf(law.name, failing, b);
}

}  // namespace

ShrunkFailure ShrinkFailure(const Law& law, Adapter& adapter, const Case& failing,
                            const Verdict& verdict, const Options& options,
                            const ShrinkOptions& shrink_options) {
  ShrunkFailure result;
  result.shrink = Shrink(
      failing,
      [&](const Case& candidate) {
        return SameFailure(law, candidate, RunLaw(law, adapter, candidate, options), failing, verdict);
      },
      shrink_options);
  result.verdict = result.shrink.attempts == 0 || result.shrink.accepted == 0
                       ? verdict
                       : RunLaw(law, adapter, result.shrink.minimal, options);
  return result;
}

ShrunkFailures ShrinkFailure(const Law& law, std::span<Adapter* const> adapters, const Case& failing,
                             std::span<const Verdict> verdicts, const Options& options,
                             const ShrinkOptions& shrink_options) {
  if (adapters.size() != verdicts.size() || adapters.empty()) {
    throw std::invalid_argument("ShrinkFailure: one verdict per adapter, at least one adapter");
  }
  ShrunkFailures result;
  result.shrink = Shrink(
      failing,
      [&](const Case& candidate) {
        for (size_t i = 0; i < adapters.size(); ++i) {
          if (!SameFailure(law, candidate, RunLaw(law, *adapters[i], candidate, options), failing, verdicts[i])) {
            return false;
          }
        }
        return true;
      },
      shrink_options);
  for (size_t i = 0; i < adapters.size(); ++i) {
    result.verdicts.push_back(result.shrink.accepted == 0 ? verdicts[i]
                                                          : RunLaw(law, *adapters[i], result.shrink.minimal, options));
  }
  return result;
}

}  // namespace attncheck
