// The shared opening of the laws: each step either goes on or records the verdict
// that ends the law.
#include "properties/law_run.h"

#include <fmt/format.h>

#include "properties/law_support.h"
#include "reference/backward.h"

namespace attncheck {

bool LawRun::Open(const Case& c) {
  if (!Supports(c)) return false;
  Use(reference::MakeScenario(c));
  return Start();
}

bool LawRun::Supports(const Case& c) {
  std::optional<std::string> why;
  if (c.query_len > c.key_len() && !law_.needs.queries_beyond_keys) {
    why = fmt::format("Tq {} > Tk {}: {}'s scenarios need Tq <= Tk", c.query_len, c.key_len(), law_.name);
  } else {
    why = WhyUnsupported(adapter_, c);
  }
  if (why) stop_ = Verdict::Skip(std::move(*why));
  return !why;
}

bool LawRun::Start() {
  std::string why;
  const std::optional<MaskConvention> convention = law_.needs.backward
                                                       ? ChooseBackwardConvention(adapter_, *scenario_, &why)
                                                       : ChooseConvention(adapter_, *scenario_, &why);
  if (!convention) {
    stop_ = Verdict::Skip(std::move(why));
    return false;
  }
  return Start(*convention);
}

bool LawRun::Start(MaskConvention convention) {
  convention_ = convention;
  if (law_.needs.backward) {
    const reference::Scenario& s = *scenario_;
    const auto profiles = std::span(reference::kUpstreamProfiles);
    upstream_ = reference::UpstreamGradient(s, s.c.seed, profiles[s.c.seed % profiles.size()]);
    ZeroRows(upstream_, s.empty_row);
    base_ = RunBackward(adapter_, s, upstream_, convention);
  } else {
    base_ = RunAttention(adapter_, *scenario_, convention);
  }
  if (!base_.ok()) stop_ = Fault(base_);
  return base_.ok();
}

std::optional<AdapterRun> LawRun::Attend(const reference::Scenario& t, std::string_view what) {
  return Attend(t, convention_, what);
}

std::optional<AdapterRun> LawRun::Attend(const reference::Scenario& t, MaskConvention convention,
                                         std::string_view what) {
  AdapterRun run = RunAttention(adapter_, t, convention);
  if (run.ok()) return run;
  stop_ = Fault(run, what);
  return std::nullopt;
}

std::optional<AdapterRun> LawRun::Backward(const reference::Scenario& t, const TensorD& dout, std::string_view what) {
  AdapterRun run = RunBackward(adapter_, t, dout, convention_);
  if (run.ok()) return run;
  stop_ = Fault(run, what);
  return std::nullopt;
}

bool LawRun::Tests(const reference::Scenario& perturbed) {
  std::optional<std::string> why = WhyPerturbedFillCannotBlock(adapter_, perturbed, convention_);
  if (why) stop_ = Verdict::Skip(std::move(*why));
  return !why;
}

std::optional<AdapterRun> LawRun::AttendPerturbed(const reference::Scenario& t, std::string_view what) {
  if (!Tests(t)) return std::nullopt;
  return Attend(t, what);
}

std::optional<AdapterRun> LawRun::BackwardPerturbed(const reference::Scenario& t, const TensorD& dout,
                                                    std::string_view what) {
  if (!Tests(t)) return std::nullopt;
  return Backward(t, dout, what);
}

std::optional<AdapterRun> LawRun::BackwardRelaid(const reference::Scenario& t, const TensorD& dout,
                                                 std::string_view what) {
  std::string why;
  const std::optional<MaskConvention> convention = ChooseBackwardConvention(adapter_, t, &why);
  if (!convention) {
    stop_ = Verdict::Skip(std::move(why));
    return std::nullopt;
  }
  AdapterRun run = RunBackward(adapter_, t, dout, *convention);
  if (run.ok()) return run;
  stop_ = Fault(run, what);
  return std::nullopt;
}

std::optional<AdapterRun> LawRun::AttendRelaid(const reference::Scenario& t) {
  std::string why;
  const std::optional<MaskConvention> convention = ChooseConvention(adapter_, t, &why);
  if (!convention) {
    stop_ = Verdict::Skip(std::move(why));
    return std::nullopt;
  }
  return Attend(t, *convention);
}

Verdict LawRun::Fault(const AdapterRun& run, std::string_view what) const {
  return FaultVerdict(run, what.empty() ? law_.name : fmt::format("{}{}", law_.name, what));
}

}  // namespace attncheck
