// Shared by the backward-* laws (backward_support.h).
#include "properties/backward_support.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fmt/format.h>

#include "properties/law_support.h"
#include "reference/data.h"

namespace attncheck {

using reference::Scenario;

bool VisibleWithin(const Scenario& s, int b, int i, int anchor) {
  for (int j = 0; j < s.tk; ++j)
    if (s.is_visible(b, i, j) && (anchor < 0 || !s.is_visible(b, anchor, j))) return false;
  return true;
}

namespace {

template <class Differs>
std::optional<WorstElement> FirstKeyElement(const AdapterRun& run, int b, int j, Differs differs) {
  for (const char* name : {"dk", "dv"}) {
    const TensorD& t = run.tensor(name);
    for (int kv = 0; kv < t.shape[1]; ++kv)
      for (int d = 0; d < t.shape[3]; ++d) {
        double want = 0.0;
        if (differs(name, t.at(b, kv, j, d), b, kv, d, want)) {
          return WorstElement::Compared(name, b, kv, j, d, t.at(b, kv, j, d), want, 0.0);
        }
      }
  }
  return std::nullopt;
}

}  // namespace

std::optional<WorstElement> NonZeroKeyGradient(const AdapterRun& run, int b, int j) {
  return FirstKeyElement(run, b, j, [](const char*, double got, int, int, int, double& want) {
    want = 0.0;
    return !(got == 0.0);
  });
}

std::optional<WorstElement> KeyGradientDifference(const AdapterRun& got, const AdapterRun& want, int b, int j) {
  return FirstKeyElement(got, b, j, [&](const char* name, double value, int batch_row, int kv, int d, double& other) {
    other = want.tensor(name).at(batch_row, kv, j, d);
    return std::memcmp(&value, &other, sizeof value) != 0 && !(std::isnan(value) && std::isnan(other));
  });
}

namespace {
bool SameValue(double x, double y) { return x == y || (std::isnan(x) && std::isnan(y)); }
}  // namespace

namespace {
// The spacing of `dtype`'s values at magnitude x (subnormals included).
double UnitInLastPlace(Dtype dtype, double x) {
  const int mantissa = dtype == Dtype::kF16 ? 10 : dtype == Dtype::kBf16 ? 7 : 23;
  const int min_exponent = dtype == Dtype::kF16 ? -14 : -126;
  const int exponent = x > 0.0 && std::isfinite(x) ? std::ilogb(x) : min_exponent;
  return std::ldexp(1.0, std::max(exponent, min_exponent) - mantissa);
}

const TensorD& Named(const reference::BackwardResult& r, std::string_view tensor) {
  return tensor == "dq" ? r.dq : tensor == "dk" ? r.dk : r.dv;
}
}  // namespace

SummationOrder::SummationOrder(const Capabilities& caps, const Scenario& s, const TensorD& dout) {
  if (caps.backward_deterministic) return;
  sums_ = reference::Backward(s, dout, std::nullopt, /*absolute=*/true);
  storage_ = s.c.dtype;
  unit_ = UnitRoundoff(reference::DeclaredBackwardRounding(s.c.dtype, caps.accuracy).accumulation);
  dq_terms_ = s.tk;
  key_terms_ = s.tq * (s.c.q_heads / std::max(1, s.c.kv_heads));
}

double SummationOrder::Bound(std::string_view tensor, int b, int h, int i, int d, double x, double y) const {
  if (!sums_) return 0.0;
  const int terms = tensor == "dq" ? dq_terms_ : key_terms_;
  const double magnitude_sum = std::abs(Named(*sums_, tensor).at(b, h, i, d));
  return 2.0 * 2.0 * std::max(terms - 1, 0) * unit_ * magnitude_sum +
         UnitInLastPlace(storage_, std::max(std::abs(x), std::abs(y)));
}

namespace {
// Whether x and y differ beyond `order`'s bound for tensor[b, h, i, d] (by value where exact).
bool Differ(const SummationOrder& order, std::string_view tensor, int b, int h, int i, int d, double x, double y,
            double& bound) {
  bound = 0.0;
  if (SameValue(x, y)) return false;
  if (order.exact() || !std::isfinite(x) || !std::isfinite(y)) return true;
  bound = order.Bound(tensor, b, h, i, d, x, y);
  return std::abs(x - y) > bound;
}
}  // namespace

std::string BeyondOrder(const WorstElement& diff) {
  if (diff.bound <= 0.0) return "";
  return fmt::format(" (by {:.3g}, beyond the {:.3g} two summation orders may differ by: backward_deterministic is "
                     "false)",
                     std::abs(diff.got - diff.want), diff.bound);
}

std::optional<WorstElement> KeyGradientValueDifference(const AdapterRun& got, const AdapterRun& want, int b, int j,
                                                       const SummationOrder& order) {
  double bound = 0.0;
  std::optional<WorstElement> diff =
      FirstKeyElement(got, b, j, [&](const char* name, double value, int batch_row, int kv, int d, double& other) {
        other = want.tensor(name).at(batch_row, kv, j, d);
        return Differ(order, name, batch_row, kv, j, d, value, other, bound);
      });
  if (diff) diff->bound = bound;
  return diff;
}

std::optional<WorstElement> DqValueDifference(const TensorD& a, const TensorD& b, int batch_row, int i,
                                              const SummationOrder& order) {
  for (int h = 0; h < a.shape[1]; ++h)
    for (int d = 0; d < a.shape[3]; ++d) {
      const double x = a.at(batch_row, h, i, d), y = b.at(batch_row, h, i, d);
      double bound = 0.0;
      if (Differ(order, "dq", batch_row, h, i, d, x, y, bound))
        return WorstElement::Compared("dq", batch_row, h, i, d, x, y, bound);
    }
  return std::nullopt;
}

Verdict NanFromEmptyRowsIsAHazard(Verdict v, const Capabilities& caps, const Case& c) {
  if (!v.failed() || std::isfinite(v.worst.got)) return v;
  if (caps.masked_rows != MaskedRowPolicy::kNaN && caps.masked_rows != MaskedRowPolicy::kUnspecified) return v;
  const reference::Scenario layout = reference::MakeLayout(v.ran_case ? *v.ran_case : c);
  if (std::none_of(layout.empty_row.begin(), layout.empty_row.end(), [](uint8_t e) { return e != 0; })) return v;
  v.outcome = Outcome::kHazard;
  v.message += fmt::format(" (a row with no visible key under masked-row policy {}: its NaN reaches the gradients, "
                           "pytorch #41508)",
                           Name(caps.masked_rows));
  return v;
}

std::optional<Verdict> BeyondRange(Oracle& oracle, std::string_view name, std::string_view what) {
  const Dtype dtype = oracle.scenario().c.dtype;
  const TensorD& want = oracle.Want(name);
  const auto beyond = std::find_if(want.data.begin(), want.data.end(),
                                   [&](double x) { return std::isinf(reference::RoundTo(dtype, x)); });
  if (beyond == want.data.end()) return std::nullopt;
  return Verdict::Skip(fmt::format("{} ({}): the reference gradient reaches {:.6g}, beyond the range of {}", what,
                                   name, *beyond, Name(dtype)));
}

void KeepCloser(Verdict& kept, Verdict pass) {
  if (ErrorRatio(pass) > ErrorRatio(kept)) kept = std::move(pass);
}

Verdict CheckGradients(Oracle& oracle, const AdapterRun& run, const std::vector<uint8_t>& dq_rows,
                       std::string_view what) {
  std::optional<Verdict> skip;
  Verdict closest = Verdict::Pass();
  for (const char* name : {"dq", "dk", "dv"}) {
    const std::vector<uint8_t> every_row;
    if (std::optional<Verdict> beyond = BeyondRange(oracle, name, what)) {
      if (!skip) skip = std::move(beyond);
      continue;
    }
    Verdict v = oracle.CheckOutcome(run.tensor(name), name == std::string_view("dq") ? dq_rows : every_row,
                                    fmt::format("{} ({})", what, name), name);
    if (v.failed()) return v.At(fmt::format("{} vs reference backward", name), Role::kNumeric);
    if (v.passed()) {
      KeepCloser(closest, std::move(v));
    } else if (v.skipped() && !skip) {
      skip = std::move(v);  // an uninformative bound
    }
  }
  if (!run.lse.data.empty()) {  // the log-sum-exp the kernel reports (Capabilities::backward_lse), f32 whatever the dtype
    Verdict v = oracle.CheckOutcome(run.lse, dq_rows, fmt::format("{} (lse)", what), "lse");
    if (v.failed()) return v.At("lse vs reference log-sum-exp", Role::kNumeric);
    if (v.passed()) {
      KeepCloser(closest, std::move(v));
    } else if (v.skipped() && !skip) {
      skip = std::move(v);  // an uninformative bound
    }
  }
  return skip ? *skip : closest;
}

}  // namespace attncheck
