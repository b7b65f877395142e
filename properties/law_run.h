// The opening every law shares (DESIGN §6): support → scenario → convention →
// base run → fault verdict, with the law's name taken from the law table. A step
// that ends the law (a skip, an adapter fault) returns false or nullopt, and
// stop() is the verdict to return; each law file keeps only what is its own.
#pragma once

#include <optional>
#include <string_view>

#include "adapters/harness.h"
#include "properties/laws.h"
#include "reference/scenario.h"

namespace attncheck {

class LawRun {
 public:
  // `check` names the law: its row of the law table.
  LawRun(LawCheck check, Adapter& adapter) : law_(LawOf(check)), adapter_(adapter) {}

  // The whole opening on case c: Supports(c), the scenario of c, Start().
  bool Open(const Case& c);
  // The adapter can run c (else a skip with its reason).
  bool Supports(const Case& c);
  // The law's scenario, when the law derives it from another case than its own.
  void Use(reference::Scenario s) { scenario_ = std::move(s); }
  // The base run of the scenario, in the convention ChooseConvention picks (else
  // a skip) or in `convention`.
  bool Start();
  bool Start(MaskConvention convention);

  // Another run, on a scenario of the same layout, in the base run's convention
  // or in `convention`; `what` is appended to the law's name in a fault verdict.
  std::optional<AdapterRun> Attend(const reference::Scenario& t, std::string_view what = {});
  std::optional<AdapterRun> Attend(const reference::Scenario& t, MaskConvention convention,
                                   std::string_view what = {});
  // A run on a scenario of another layout, in the convention chosen for it (else a skip).
  std::optional<AdapterRun> AttendRelaid(const reference::Scenario& t);
  // A run on the scenario with keys perturbed (PerturbationMagnitude), in the base run's
  // convention; a skip where they outgrow a fill the kernel adds to the score
  // (law_support.h WhyPerturbedFillCannotBlock): such a run tests no promise.
  std::optional<AdapterRun> AttendPerturbed(const reference::Scenario& t, std::string_view what = {});

  // A backward law (LawNeeds::backward): the base run is RunBackward in a convention
  // ChooseBackwardConvention picks, with upstream() as dO (UpstreamGradient of the
  // case's seed, a profile chosen by it; rows with no visible key get none).
  // Another backward run on a scenario of the same layout, in the base run's convention:
  std::optional<AdapterRun> Backward(const reference::Scenario& t, const TensorD& dout, std::string_view what = {});
  // The same with keys perturbed, as AttendPerturbed.
  std::optional<AdapterRun> BackwardPerturbed(const reference::Scenario& t, const TensorD& dout,
                                              std::string_view what = {});
  // A backward run on a scenario of another layout, in the convention chosen for it (else a skip).
  std::optional<AdapterRun> BackwardRelaid(const reference::Scenario& t, const TensorD& dout,
                                           std::string_view what = {});
  const TensorD& upstream() const { return upstream_; }

  // The verdict of a faulty run (properties/law_support.h FaultVerdict) under the law's name.
  Verdict Fault(const AdapterRun& run, std::string_view what = {}) const;
  // The verdict that ended the law (after a false or nullopt above).
  Verdict stop() { return std::move(*stop_); }

  const Law& law() const { return law_; }
  Adapter& adapter() const { return adapter_; }
  const reference::Scenario& scenario() const { return *scenario_; }
  MaskConvention convention() const { return convention_; }
  const AdapterRun& base() const { return base_; }

 private:
  const Law& law_;
  Adapter& adapter_;
  std::optional<reference::Scenario> scenario_;
  // Whether a run on the perturbed scenario tests the contract (else stop_ holds the skip).
  bool Tests(const reference::Scenario& perturbed);
  MaskConvention convention_{};
  AdapterRun base_;
  TensorD upstream_;
  std::optional<Verdict> stop_;
};

}  // namespace attncheck
