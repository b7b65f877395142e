// Mutants of the backward pass (the backward-* laws): the eigen kernel, its forward
// correct, with one defect in its backward each (eigen_adapter.h BackwardSlips),
// modelled on shipped bugs: the mask applied in the forward and forgotten in the
// backward (the Triton fused-attention tutorial, triton #4174), dK/dV not summed
// over a query group (levanter #449), softcap's derivative missing
// (flash-attention #2396), a sliding window or causal diagonal read differently in
// the backward (MSLK #263), NaN gradients from rows with no visible key
// (pytorch #41508), and a log-sum-exp saved for one row read for another.
#include "adapters/eigen/eigen_adapter.h"
#include "adapters/mutants/mutant_base.h"

namespace attncheck::mutants {
namespace {

class BackwardMutant : public MutantAdapter {
 public:
  explicit BackwardMutant(BackwardSlips slips, bool descriptor_only = false)
      : slips_(slips), descriptor_only_(descriptor_only) {}

  void backward(const BackwardArgs& args) override { EigenBackward(args, defective() ? slips_ : BackwardSlips{}); }

 protected:
  void Adjust(Capabilities& caps) const override {
    caps.has_backward = true;
    caps.backward_lse = true;
    caps.backward_saved = slips_.lse_row_shift != 0;  // the slip reads another row of the saved log-sum-exp
    if (descriptor_only_) {  // the slip lives in reading the descriptor
      caps.masks = {MaskConvention::kDescriptor};
      caps.descriptor_forms = adapters::PaddedDescriptorForms();
    }
  }

 private:
  BackwardSlips slips_;
  bool descriptor_only_;
};

template <auto Slips, bool kDescriptorOnly = false>
class BackwardSlipped final : public BackwardMutant {
 public:
  BackwardSlipped() : BackwardMutant(Slips(), kDescriptorOnly) {}
};

BackwardSlips DkDvUnmasked() { return {.dkdv_unmasked = true}; }
BackwardSlips DqUnmasked() { return {.dq_unmasked = true}; }
BackwardSlips WindowOffByOne() { return {.descriptor = {.window_left_as_keys = true}}; }
BackwardSlips BackwardTopLeft() { return {.descriptor = {.top_left = true}}; }
BackwardSlips GqaFirstHead() { return {.kv_sum = BackwardSlips::KvSum::kFirstHeadOnly}; }
BackwardSlips GqaModulo() { return {.kv_sum = BackwardSlips::KvSum::kModulo}; }
BackwardSlips SoftcapDerivative() { return {.softcap_derivative_missing = true}; }
BackwardSlips EmptyRowsNan() { return {.empty_rows_nan = true}; }
BackwardSlips LseOtherRow() { return {.lse_row_shift = 1}; }
BackwardSlips ReportedLseUnmasked() { return {.reported_lse_unmasked = true}; }

}  // namespace

std::vector<MutantDef> BackwardMutants() {
  return {
      Def<BackwardSlipped<DkDvUnmasked>>("bwd-dkdv-unmasked",
                                 "backward: dK and dV from the softmax over every key, the mask forgotten "
                                 "(forward masked)",
                                 {"backward-non-interference", "backward-packed-isolation",
                                  "backward-self-consistency"}),
      Def<BackwardSlipped<DqUnmasked>>("bwd-dq-unmasked", "backward: dQ from the softmax over every key, the mask forgotten",
                               {"backward-non-interference", "backward-packed-isolation",
                                "backward-self-consistency"}),
      Def<BackwardSlipped<WindowOffByOne, true>>("bwd-window-off-by-one",
                                         "backward: the descriptor window (W - 1, 0) read as W keys back (one key "
                                         "more than the forward)",
                                         {"backward-non-interference", "backward-self-consistency"}),
      Def<BackwardSlipped<BackwardTopLeft, true>>("bwd-causal-top-left",
                                  "backward: the causal diagonal aligned top-left although the descriptor (and the "
                                  "forward) say bottom-right",
                                  {"backward-agreement", "backward-self-consistency"}),
      Def<BackwardSlipped<GqaFirstHead>>("bwd-gqa-unsummed",
                                 "backward: dK and dV of a kv head from the first query head of its group only",
                                 {"backward-gqa", "backward-self-consistency"}),
      Def<BackwardSlipped<GqaModulo>>("bwd-gqa-modulo", "backward: query head h's dK and dV summed into kv head h mod Hkv",
                              {"backward-gqa", "backward-self-consistency"}),
      Def<BackwardSlipped<SoftcapDerivative>>("bwd-softcap-derivative",
                                      "backward: softcap's derivative 1 - tanh^2 missing (dZ = dS)",
                                      {"backward-agreement", "backward-self-consistency"}),
      Def<BackwardSlipped<EmptyRowsNan>>("bwd-empty-rows-nan",
                                 "backward: a row with no visible key normalised by its -inf log-sum-exp: NaN "
                                 "gradients",
                                 {"backward-masked-rows", "backward-self-consistency"}),
      Def<BackwardSlipped<LseOtherRow>>("bwd-lse-other-row",
                                "backward: P recomputed from the saved log-sum-exp (backward_saved) of the next row",
                                {"backward-agreement", "backward-packed-isolation", "backward-self-consistency"}),
      Def<BackwardSlipped<ReportedLseUnmasked>>("bwd-lse-unmasked",
                                        "backward: the log-sum-exp it reports taken over every key of the row, the "
                                        "mask forgotten (the gradients right)",
                                        {"backward-agreement"}),
  };
}

}  // namespace attncheck::mutants
