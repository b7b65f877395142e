// Rerun classification of a failure (see classify.h).
#include "properties/classify.h"

#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "adapters/harness.h"
#include "properties/law_support.h"
#include "properties/tolerance.h"

namespace attncheck {
namespace {

bool SameBits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0 || (std::isnan(a) && std::isnan(b)); }

}  // namespace

std::string_view Name(FailureKind k) {
  switch (k) {
    case FailureKind::kDeterministic: return "deterministic";
    case FailureKind::kFlaky: return "flaky";
    case FailureKind::kNaN: return "NaN";
    case FailureKind::kCrash: return "crash";
    case FailureKind::kTimeout: return "timeout";
    case FailureKind::kException: return "exception";
    case FailureKind::kGarbage: return "garbage";
  }
  return "?";
}

bool SameVerdict(const Verdict& a, const Verdict& b) {
  const WorstElement &x = a.worst, &y = b.worst;
  return a.outcome == b.outcome && x.b == y.b && x.h == y.h && x.i == y.i && x.j == y.j && SameBits(x.got, y.got) &&
         SameBits(x.want, y.want) && SameBits(x.error, y.error) && SameBits(x.bound, y.bound) &&
         SameBits(a.max_abs, b.max_abs);
}

bool AttentionOutputHasNaN(Adapter& adapter, const Case& c) {
  if (WhyUnsupported(adapter, c)) return false;
  const reference::Scenario s = reference::MakeScenario(c);
  const std::optional<MaskConvention> convention = ChooseConvention(adapter, s, nullptr);
  if (!convention) return false;
  const AdapterRun run = RunAttention(adapter, s, *convention);
  if (!run.ok()) return false;
  const std::vector<uint8_t> rows = RealNonEmptyRows(s);
  for (int b = 0; b < run.out.shape[0]; ++b)
    for (int h = 0; h < run.out.shape[1]; ++h)
      for (int i = 0; i < run.out.shape[2]; ++i) {
        if (!rows[RowIndex(s, b, i)]) continue;
        for (int d = 0; d < run.out.shape[3]; ++d)
          if (std::isnan(run.out.at(b, h, i, d))) return true;
      }
  return false;
}

Classification ClassifyFailure(const Verdict& first, const std::function<Verdict()>& rerun, int reruns,
                               Adapter* adapter, const Case& c) {
  Classification result;
  if (IsAdapterError(first.outcome)) {
    switch (first.fault) {
      case Fault::kCrash: result.kind = FailureKind::kCrash; break;
      case Fault::kTimeout: result.kind = FailureKind::kTimeout; break;
      case Fault::kGarbage: result.kind = FailureKind::kGarbage; break;
      case Fault::kNone:
      case Fault::kException: result.kind = FailureKind::kException; break;
    }
    result.detail = fmt::format("the adapter did not answer ({}); not rerun", Name(first.fault));
    return result;
  }
  std::vector<Verdict> seen;
  for (int n = 0; n < reruns; ++n) {
    Verdict again = rerun();
    ++result.reruns;
    if (SameVerdict(first, again)) ++result.reproduced;
    seen.push_back(std::move(again));
  }
  result.nan_output = std::isnan(first.worst.got) || (adapter != nullptr && AttentionOutputHasNaN(*adapter, c));
  if (result.reproduced < result.reruns) {
    result.kind = FailureKind::kFlaky;
    int failing = 0;
    for (const Verdict& v : seen) failing += v.passed() ? 0 : 1;
    result.detail = fmt::format("{} of {} reruns gave the same numbers ({} still failed){}", result.reproduced,
                                result.reruns, failing, result.nan_output ? "; the output holds NaN" : "");
  } else if (result.nan_output) {
    result.kind = FailureKind::kNaN;
    result.detail = fmt::format("the adapter's output holds NaN in a real row; {} of {} reruns gave the same numbers",
                                result.reproduced, result.reruns);
  } else {
    result.kind = FailureKind::kDeterministic;
    result.detail = fmt::format("{} of {} reruns gave the same numbers", result.reproduced, result.reruns);
  }
  return result;
}

}  // namespace attncheck
