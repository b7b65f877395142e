// Law 6, all-masked-row safety (DESIGN §6), against the adapter's contract
// (cases/capabilities.h). With at least one query row that sees no key (a pad
// query is added when the case has none):
//   (a) real rows stay finite and agree with the oracle;
//   (b) rows with no visible key follow the declared policy (zeros: exactly 0; NaN;
//       mean-v: the mean of the row's values; unspecified: anything, but NaN/inf
//       there is a hazard). A finite fill (lowest, −1e4, −1e9) empties a row only
//       for a kernel whose blocking is "fill" or "fill-rows"; under "neg-inf" (ggml) such a row
//       attends to every key, so its output must be a finite weighted mean of the
//       values (inside their range): a fill that overflowed (lowest + lowest → −inf
//       in f16/bf16) breaks that. The scenario (law_support.h EmptyRowsCaseFor)
//       always carries one batch row whose every key is blocked: pads, or for a
//       varlen kernel taking Tq > Tk, leading queries of an empty document, so (b)
//       has rows to check — unless every such row is a pad query in no varlen
//       sequence, which the kernel never produces (AdapterRun::unproduced): then,
//       (a) and (c) passing, the law is a skip with that reason;
//   (c) NaN and then huge values poisoned into keys/values that no query of the
//       row may read never reach a visible output (bitwise unchanged). NaN that
//       spreads is a failure where the contract promises NaN isolation and a hazard
//       where it does not; a huge value read through a finite fill is a hazard
//       where the contract lets a score outweigh the fill ("neg-inf", "fill-rows").
#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <limits>

#include "properties/law_run.h"
#include "properties/law_support.h"
#include "properties/row_error.h"
#include "properties/tolerance.h"
#include "reference/attention.h"
#include "reference/data.h"
#include "reference/mask.h"
#include "reference/positional.h"

namespace attncheck {
namespace {

using reference::Scenario;

// What a row with no visible key must hold at out[b, h, i, d], and why not (empty: fine).
struct RowRule {
  const Scenario& s;
  MaskConvention convention;
  MaskedRowPolicy policy;
  bool empties;  // FillEmptiesRows

  // The mean of v[b, kv(h), ·, d] over every key slot of the batch row, and its range.
  void Values(int b, int h, int d, double& mean, double& lo, double& hi) const {
    const int kv = h / (s.q.shape[1] / s.v.shape[1]);
    mean = 0.0;
    lo = INFINITY;
    hi = -INFINITY;
    for (int j = 0; j < s.tk; ++j) {
      const double v = reference::RoundTo(s.c.dtype, s.v.at(b, kv, j, d));
      mean += v;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    mean /= std::max(s.tk, 1);
  }

  // The value the rule wants at out[b, h, i, d] holding x: 0, NaN, the mean of
  // the values, or (a row that attends to every key) x itself when inside the
  // values' range, else the nearest end of it.
  double Want(int b, int h, int d, double x) const {
    double mean = 0.0, lo = 0.0, hi = 0.0;
    Values(b, h, d, mean, lo, hi);
    if (!empties) return std::isfinite(x) ? std::clamp(x, lo, hi) : mean;
    switch (policy) {
      case MaskedRowPolicy::kZeros: return 0.0;
      case MaskedRowPolicy::kNaN: return std::nan("");
      case MaskedRowPolicy::kMeanV: return mean;
      case MaskedRowPolicy::kUnspecified: return x;
    }
    return x;
  }

  std::string Broken(int b, int h, int d, double x) const {
    double mean = 0.0, lo = 0.0, hi = 0.0;
    if (!empties || policy == MaskedRowPolicy::kMeanV) Values(b, h, d, mean, lo, hi);  // only these rules read them
    if (!empties) {
      // the row attends to every key: a weighted mean of the values
      const double slack = (hi - lo + std::abs(hi) + std::abs(lo)) * 4.0 * UnitRoundoff(s.c.dtype);
      if (std::isfinite(x) && x >= lo - slack && x <= hi + slack) return "";
      return fmt::format("is not a weighted mean of the row's values (range [{:.6g}, {:.6g}]): under the finite "
                         "fill of {} ({:g} in {}) the row attends to every key, so a fill overflowed (e.g. fill + "
                         "fill → −inf)",
                         lo, hi, Name(convention), reference::AdditiveFill(convention, s.c.dtype), Name(s.c.dtype));
    }
    switch (policy) {
      case MaskedRowPolicy::kZeros: return x == 0.0 ? "" : "is not 0; the adapter declares policy 'zeros'";
      case MaskedRowPolicy::kNaN: return std::isnan(x) ? "" : "is not NaN; the adapter declares policy 'nan'";
      case MaskedRowPolicy::kMeanV: {
        const double tolerance = (std::abs(mean) + hi - lo) * 8.0 * UnitRoundoff(s.c.dtype) * (1.0 + std::sqrt(s.tk));
        if (std::abs(x - mean) <= tolerance) return "";
        return fmt::format("is not the mean of the row's values ({:.9g}); the adapter declares policy 'mean-v'",
                           mean);
      }
      case MaskedRowPolicy::kUnspecified: return "";
    }
    return "";
  }
};

// A failure the kernel's contract could have declared, and the key that declares it
// where the contract is data: a process backend's hello (adapters/process/PROTOCOL.md;
// the Python kit's KEYS) or a C plugin's table (include/attncheck/adapter.h).
enum class Declarable { kNanLeak, kNanRow, kPadRow };
struct ContractKey {
  Declarable failure;
  const char* json;    // in the hello's capabilities
  const char* python;  // attncheck.capabilities(...)
  const char* c_abi;   // the plugin table's field
  const char* turns;   // what the failure becomes
};
constexpr ContractKey kContractKeys[] = {
    {Declarable::kNanLeak, "\"nan_isolation\": false", "nan_isolation=False",
     "contract.nan_isolation = 0 (attncheck_contract, ABI 1.1)", "a declared hazard"},
    {Declarable::kNanRow, "\"masked_rows\": \"nan\" (or \"unspecified\")", "masked_rows=\"nan\"",
     "capabilities.masked_rows = ATTNCHECK_MASKED_ROWS_NAN (or _UNSPECIFIED)",
     "the declared policy (a hazard under \"unspecified\")"},
    {Declarable::kPadRow, "\"pad_query_rows\": \"zeros\" (or the policy those rows follow)",
     "pad_query_rows=\"zeros\"", nullptr, "that policy for the rows past seqused_q"},
};

// One sentence naming the key that declares `failure`, for an adapter whose contract is
// data (a process backend, a C plugin); empty where the contract is the adapter's code.
std::string DeclareHint(const Adapter& adapter, Declarable failure) {
  const ContractSource source = adapter.capabilities().contract_source;
  if (source == ContractSource::kCode) return "";
  for (const ContractKey& key : kContractKeys) {
    if (key.failure != failure) continue;
    if (source == ContractSource::kCAbi) {
      if (key.c_abi == nullptr) return "";  // no field in the plugin table
      return fmt::format("; if the kernel does not promise this, set {} in the plugin's table and it is {}, "
                         "not a failure", key.c_abi, key.turns);
    }
    return fmt::format("; if the kernel does not promise this, declare {} in the hello's capabilities "
                       "(Python kit: attncheck.capabilities({})) and it is {}, not a failure",
                       key.json, key.python, key.turns);
  }
  return "";
}

// Why (b) checked nothing: every row with no visible key was the harness's fill.
constexpr const char* kOnlyPadQueries =
    "the rows with no visible key are pad queries in no varlen sequence: the kernel produces no output for them";

constexpr std::string_view kPolicyStep = "row with no visible key vs declared policy";

// The first key slot of batch row b whose perturbation changes out[b, ·, i, ·] of
// the base run: a read by a row that has no visible key (−1: none; nullopt: the
// adapter failed, law.stop() says how). Each key alone for up to 64 slots, else
// all of the row's keys at once (then the key is unknown: the row's first slot).
std::optional<int> KeyReadByEmptyRow(LawRun& law, int b, int i) {
  const Scenario& s = law.scenario();
  const double magnitude = PerturbationMagnitude(s, law.convention());
  const auto changes = [&](int first, int last) -> std::optional<bool> {
    Scenario perturbed = s;
    for (int j = first; j < last; ++j)
      for (int h = 0; h < s.k.shape[1]; ++h) {
        for (int d = 0; d < s.k.shape[3]; ++d) perturbed.k.at(b, h, j, d) += d % 2 ? -magnitude : magnitude;
        for (int d = 0; d < s.v.shape[3]; ++d) perturbed.v.at(b, h, j, d) += d % 2 ? magnitude : -magnitude;
      }
    const std::optional<AdapterRun> run = law.AttendPerturbed(perturbed, " (keys of a row with no visible key perturbed)");
    if (!run) return std::nullopt;
    return FirstBitwiseDifference(run->out, law.base().out, b, i).has_value();
  };
  if (s.tk > 64) {
    const std::optional<bool> any = changes(0, s.tk);
    if (!any) return std::nullopt;
    return *any ? 0 : -1;
  }
  for (int j = 0; j < s.tk; ++j) {
    const std::optional<bool> read = changes(j, j + 1);
    if (!read) return std::nullopt;
    if (*read) return j;
  }
  return -1;
}

// (b) on the rows with no visible key the kernel produced (`run.unproduced` rows
// hold the harness's fill, not the kernel's output); `checked` counts the rows read.
// A broken row is a read (role kEmptyRowRead, the key in worst.key) when the
// convention empties such rows and perturbing a key of its batch row changes it,
// else a policy value.
Verdict CheckPolicy(LawRun& law, const Capabilities& caps, int& checked) {
  const Scenario& s = law.scenario();
  const AdapterRun& run = law.base();
  const MaskConvention convention = law.convention();
  const TensorD& out = run.out;
  const bool empties = FillEmptiesRows(convention, s.c.dtype, caps.blocking);
  const RowRule real_rule{s, convention, caps.masked_rows, empties};
  // A pad query the kernel produced is a padded descriptor's row past seqused_q (a
  // varlen one's is unproduced): pad_query_rows where the adapter declares it.
  const RowRule pad_rule{s, convention, caps.pad_query_rows.value_or(caps.masked_rows), empties};
  std::optional<Verdict> hazard;
  checked = 0;
  for (int b = 0; b < s.batch; ++b)
    for (int i = 0; i < s.tq; ++i) {
      if (!s.empty_row[RowIndex(s, b, i)]) continue;
      if (!run.unproduced.empty() && run.unproduced[static_cast<size_t>(b) * s.tq + i]) continue;
      const bool past_seqused_q = convention == MaskConvention::kDescriptor && !s.query_valid[RowIndex(s, b, i)];
      const RowRule& rule = past_seqused_q ? pad_rule : real_rule;
      ++checked;
      for (int h = 0; h < out.shape[1]; ++h)
        for (int d = 0; d < out.shape[3]; ++d) {
          const double x = out.at(b, h, i, d);
          if (const std::string broken = rule.Broken(b, h, d, x); !broken.empty()) {
            WorstElement worst = WorstElement::Compared("out", b, h, i, d, x, rule.Want(b, h, d, x), 0.0);
            KeepRow(worst, out, out);
            for (int e = 0; e < out.shape[3]; ++e) worst.row_want[e] = rule.Want(b, h, e, out.at(b, h, i, e));
            const bool may_read = EmptyRowsMayRead(caps, convention, s.c.dtype);
            const std::optional<int> key = may_read ? std::optional<int>(-1) : KeyReadByEmptyRow(law, b, i);
            if (!key) return law.stop();
            worst.key = *key;
            const std::string read =
                *key >= 0 ? fmt::format("; it reads key slot {} of its batch row although it sees no key", *key) : "";
            const std::string hint =
                !rule.empties ? ""
                : std::isnan(x) ? DeclareHint(law.adapter(), Declarable::kNanRow)
                : past_seqused_q && !caps.pad_query_rows ? DeclareHint(law.adapter(), Declarable::kPadRow)
                                                         : "";
            Verdict v = Verdict::Fail(fmt::format("row with no visible key (b={}, i={}{}) under {}: out[h={}, d={}] "
                                                  "= {:.9g} {}{}{}",
                                                  b, i, past_seqused_q ? ", past seqused_q" : "", Name(convention), h,
                                                  d, x, broken, read, hint),
                                      worst, worst.error, 0.0, worst.error / std::max(std::abs(worst.want), 1e-30));
            v.At(kPolicyStep, *key >= 0 ? Role::kEmptyRowRead : Role::kPolicy);
            v.mask = convention;
            v.expected_visibility = s.visible;
            v.empty_rows_may_read = may_read;
            return v;
          }
          if (rule.empties && rule.policy == MaskedRowPolicy::kUnspecified && !std::isfinite(x) && !hazard) {
            hazard = Verdict::Hazard(
                fmt::format("row with no visible key (b={}, i={}) under {} returned out[h={}, d={}] = {:.9g}: the "
                            "adapter leaves such rows unspecified, but a non-finite row spreads into every later "
                            "layer unless the caller drops it",
                            b, i, Name(convention), h, d, x),
                WorstElement::Compared("out", b, h, i, d, x, rule.Want(b, h, d, x), 0.0), INFINITY);
            hazard->At(kPolicyStep, Role::kPolicy);
            hazard->expected_visibility = s.visible;
          }
        }
    }
  return hazard ? std::move(*hazard) : Verdict::Pass();
}

// (a), (b) and (c) on the law's scenario (the case with rows that see no key).
Verdict CheckWithEmptyRows(LawRun& law, const Options& options);

}  // namespace

Verdict check_masked_rows(Adapter& adapter, const Case& c, const Options& options) {
  LawRun law(check_masked_rows, adapter);
  if (!law.Supports(c)) return law.stop();
  Case with_empty = EmptyRowsCaseFor(adapter, c, /*backward=*/false);
  law.Use(reference::MakeScenario(with_empty));
  Verdict v = CheckWithEmptyRows(law, options);
  if (!v.passed()) v.ran_case = std::move(with_empty);  // the report shows the scenario that ran
  return v;
}

namespace {

// s with `poison` in every key and value slot no query of its batch row may read (signs
// alternating along the head dim); `count` such slots.
Scenario Poisoned(const Scenario& s, double poison, int& count) {
  Scenario poisoned = s;
  count = 0;
  for (int b = 0; b < s.batch; ++b)
    for (int j : UnreadKeys(s, b)) {
      ++count;
      for (int h = 0; h < s.k.shape[1]; ++h) {
        for (int d = 0; d < s.k.shape[3]; ++d) poisoned.k.at(b, h, j, d) = (d % 2 ? -poison : poison);
        for (int d = 0; d < s.v.shape[3]; ++d) poisoned.v.at(b, h, j, d) = (d % 2 ? poison : -poison);
      }
    }
  return poisoned;
}

// The factor (at most 1) that keeps f16 poisoned keys finite once the harness encodes
// them: RoPE turns the pair (P, −P) into components up to P·√2 and xPos stretches them,
// so 60000 leaves f16 (65504) and the harness refuses the run (the whole case a skip).
// Scaled so that the largest encoded key is 60000 again, still a score no finite fill
// blocks under "neg-inf". Encoding is linear in k (an added position vector shifts it by
// a little), so one scaling suffices; 1 where nothing overflows, in f32 and bf16, and
// where the kernel encodes (owns_rope): it gets 60000 as before, and what its own
// encoding makes of it is its business.
double F16PoisonShrink(const Scenario& poisoned, const Capabilities& caps) {
  if (poisoned.c.dtype != Dtype::kF16 || caps.owns_rope || !reference::HasQkEncoding(poisoned.c)) return 1.0;
  TensorD q, k;
  reference::EncodeQk(poisoned, q, k);
  double largest = 0.0;
  for (double x : k.data) largest = std::max(largest, std::abs(x));
  return largest > 60000.0 ? 60000.0 / largest * (1.0 - 1e-3) : 1.0;
}

Verdict CheckWithEmptyRows(LawRun& law, const Options& options) {
  Adapter& adapter = law.adapter();
  if (!law.Start()) return law.stop();
  const Scenario& s = law.scenario();
  const AdapterRun& base = law.base();

  // (b) declared policy first: a failure there (a row with no visible key that
  // reads keys, or a wrong policy value) names the cause more exactly than the
  // real rows it may also spoil; a hazard is kept while (a) and (c) look for a failure
  const Capabilities caps = adapter.capabilities();
  int policy_rows = 0;
  Verdict policy = CheckPolicy(law, caps, policy_rows);
  if (policy.failed() || policy.outcome == Outcome::kSkip || policy.outcome == Outcome::kError) return policy;
  // (a) real rows
  Oracle oracle(s, options);
  Verdict real = oracle.CheckOutcome(base.out, RealNonEmptyRows(s), "real rows next to a fully masked row");
  if (!real.passed()) {
    real.At("real rows vs oracle", Role::kNumeric);
    real.expected_visibility = s.visible;
    return real;
  }
  // The hazard reported: NaN spreading into visible rows (c) outranks a NaN row (b).
  std::optional<Verdict> hazard;
  bool hazard_spreads = false;
  if (policy.hazard()) hazard = std::move(policy);

  // (c) poison keys no query may read: NaN, then huge finite values
  // Whether the base run's convention blocks unread keys, huge ones too, under the contract.
  const bool rule_blocks = FillBlocksEveryKey(law.convention(), s.c.dtype, caps.blocking);
  for (const double value : {std::numeric_limits<double>::quiet_NaN(), s.c.dtype == Dtype::kF16 ? 60000.0 : 1e30}) {
    int count = 0;
    double poison = value;
    Scenario poisoned = Poisoned(s, poison, count);
    if (count == 0) break;
    if (const double shrink = F16PoisonShrink(poisoned, caps); shrink < 1.0) {
      poison *= shrink;
      poisoned = Poisoned(s, poison, count);
    }
    const std::optional<AdapterRun> run = law.Attend(poisoned, " (poisoned)");
    if (!run) return law.stop();
    for (int b = 0; b < s.batch; ++b)
      for (int i = 0; i < s.tq; ++i) {
        if (s.empty_row[RowIndex(s, b, i)]) continue;
        if (const std::optional<WorstElement> diff = FirstBitwiseDifference(run->out, base.out, b, i)) {
          // Allowed by the contract: NaN without isolation; a huge value read through a finite fill that
          // a score may outweigh ("neg-inf", "fill-rows").
          // A huge value that comes out non-finite overflowed to inf on the way (an encoding the harness
          // applies, a dot product): inf in an unread slot is the NaN-isolation promise's business.
          const bool non_finite = std::isnan(poison) || !std::isfinite(diff->got);
          const bool allowed = non_finite ? !caps.nan_isolation : !rule_blocks;
          std::string message = fmt::format(
              "{} poisoned into {} key/value slot(s) no query may read reached query (b={}, i={}): out[h={}, "
              "d={}] = {:.9g}, was {:.9g}",
              std::isnan(poison) ? "NaN" : fmt::format("{:g}", poison), count, b, i, diff->h, diff->j, diff->got,
              diff->want);
          const double error = std::isfinite(diff->error) ? diff->error : INFINITY;
          const double relative = error / std::max(std::abs(diff->want), 1e-30);  // as max_rel reads
          if (!allowed) {
            if (non_finite) message += DeclareHint(adapter, Declarable::kNanLeak);
            Verdict v = Verdict::Fail(std::move(message), *diff, error, 0.0, relative);
            v.At("poisoned unread slots", Role::kPoison);
            v.expected_visibility = s.visible;
            return v;
          }
          if (!hazard_spreads) {
            hazard_spreads = true;
            message += non_finite
                           ? "; the adapter does not promise NaN/inf isolation, but a stale or diverged cache slot "
                             "then poisons every row that shares it (zero unused cache slots)"
                           : fmt::format("; under {} the kernel adds the finite fill to the score (blocking "
                                         "'{}'), so a huge key outweighs it (use −inf masks)",
                                         Name(law.convention()), Name(caps.blocking));
            hazard = Verdict::Hazard(std::move(message), *diff, error, 0.0, relative);
            hazard->At("poisoned unread slots", Role::kPoison);
            hazard->expected_visibility = s.visible;
          }
          break;
        }
      }
  }
  if (hazard) return std::move(*hazard);
  return policy_rows > 0 ? Verdict::Pass() : Verdict::Skip(kOnlyPadQueries);
}

}  // namespace
}  // namespace attncheck
