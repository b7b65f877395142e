#include "properties/shrink_failure.h"

#include <exception>
#include <stdexcept>

namespace attncheck {
namespace {

Verdict Check(const Law& law, Adapter& adapter, const Case& c, const Options& options) {
  try {
    return law.check(adapter, c, options);
  } catch (const std::exception& e) {
    return Verdict::Error(e.what());
  } catch (...) {
    return Verdict::Error("non-standard exception");
  }
}

bool SameFailure(const Verdict& a, const Verdict& b) {
  if (a.outcome != b.outcome) return false;
  return a.outcome != Outcome::kError || a.fault == b.fault;
}

}  // namespace

ShrunkFailure ShrinkFailure(const Law& law, Adapter& adapter, const Case& failing,
                            const Verdict& verdict, const Options& options,
                            const ShrinkOptions& shrink_options) {
  ShrunkFailure result;
  result.shrink = Shrink(
      failing,
      [&](const Case& candidate) { return SameFailure(Check(law, adapter, candidate, options), verdict); },
      shrink_options);
  result.verdict = result.shrink.attempts == 0 || result.shrink.accepted == 0
                       ? verdict
                       : Check(law, adapter, result.shrink.minimal, options);
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
          if (!SameFailure(Check(law, *adapters[i], candidate, options), verdicts[i])) return false;
        }
        return true;
      },
      shrink_options);
  for (size_t i = 0; i < adapters.size(); ++i) {
    result.verdicts.push_back(result.shrink.accepted == 0 ? verdicts[i]
                                                          : Check(law, *adapters[i], result.shrink.minimal, options));
  }
  return result;
}

}  // namespace attncheck
