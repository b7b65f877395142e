// Candidate rules and matching for `attncheck probe` (properties/probe_support.h).
#include "properties/probe_support.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "properties/tolerance.h"
#include "reference/attention.h"
#include "reference/data.h"

namespace attncheck::probe {

using reference::Scenario;

TensorD Checked(AdapterRun run) {
  if (!run.ok()) throw ProbeFault{run.fault, run.kind == AdapterFault::kRefused};
  return std::move(run.out);
}

Case BaseCase(const Probing& p, int tq, int tk, VisibilityKind visibility, int q_heads, int kv_heads) {
  Case c;
  c.q_heads = q_heads;
  c.kv_heads = kv_heads;
  c.query_len = tq;
  c.rows = {RowSpec{0, 0, {tk}, 0, 0}};
  c.visibility = visibility;
  c.dtype = p.dtype;
  c.seed = p.seed;
  return c;
}

Scenario MakeProbeScenario(const Case& c) {
  Scenario s = reference::MakeScenario(c);
  for (TensorD* t : {&s.q, &s.k, &s.v})
    for (double& x : t->data) x = reference::RoundTo(c.dtype, x);
  return s;
}

std::string CaseLine(Case c, MaskConvention convention) {
  c.mask = convention;
  return ToLine(c);
}

ProbeItem NotObservable(std::string name, std::string declared, const std::string& why) {
  return {std::move(name), std::move(declared), "not observable: " + why, true, ""};
}

ProbeItem Item(std::string name, std::string declared, const Observation& o, std::string evidence) {
  const bool agrees = o.observed == declared || o.observed == "undecided";
  return {std::move(name), std::move(declared), o.observed, agrees, std::move(evidence) + "; " + o.evidence};
}

double Score(const Scenario& s, int h, int kv, int i, int j) {
  double dot = 0.0;
  for (int d = 0; d < s.q.shape[3]; ++d) dot += s.q.at(0, h, i, d) * s.k.at(0, kv, j, d);
  return s.c.effective_scale() * dot;
}

int GroupOf(const Scenario& s, int h) { return h / (s.q.shape[1] / s.k.shape[1]); }

ScoreRule Masked(const Scenario& s, const std::vector<uint8_t>& pattern) {
  return [&s, pattern](int h, int i, int j) {
    return pattern[static_cast<size_t>(i) * s.tk + j] != 0 ? Score(s, h, GroupOf(s, h), i, j) : -INFINITY;
  };
}

TensorD UnderRule(const Scenario& s, const ScoreRule& score, const HeadMap& kv_of) {
  const int hq = s.q.shape[1], dv = s.v.shape[3];
  TensorD q(1, hq, s.tq, 1), k(1, hq, s.tk, 1), v(1, hq, s.tk, dv), bias(1, hq, s.tq, s.tk);
  std::vector<uint8_t> visible(static_cast<size_t>(s.tq) * s.tk, 0);
  for (int h = 0; h < hq; ++h) {
    for (int j = 0; j < s.tk; ++j)
      for (int d = 0; d < dv; ++d) v.at(0, h, j, d) = s.v.at(0, kv_of(h), j, d);
    for (int i = 0; i < s.tq; ++i)
      for (int j = 0; j < s.tk; ++j) {
        const double x = score(h, i, j);
        if (h == 0) visible[static_cast<size_t>(i) * s.tk + j] = std::isfinite(x) ? 1 : 0;
        bias.at(0, h, i, j) = std::isfinite(x) ? x : 0.0;
      }
  }
  return reference::AttentionCore<double>(q, k, v, visible, &bias, 1.0, 0.0).out;
}

double Tolerance(const Scenario& s) {
  double largest = 1.0;
  for (double x : s.v.data)
    if (std::isfinite(x)) largest = std::max(largest, std::abs(x));
  return 16.0 * UnitRoundoff(s.c.dtype) * largest;
}

double Distance(const TensorD& got, const TensorD& want, const std::vector<int>& rows) {
  double worst = 0.0;
  for (int h = 0; h < got.shape[1]; ++h)
    for (int i = 0; i < got.shape[2]; ++i) {
      if (!rows.empty() && std::find(rows.begin(), rows.end(), i) == rows.end()) continue;
      for (int d = 0; d < got.shape[3]; ++d) {
        const double a = got.at(0, h, i, d), b = want.at(0, h, i, d);
        if (std::isnan(a) || std::isnan(b)) {
          if (std::isnan(a) != std::isnan(b)) return INFINITY;
          continue;
        }
        worst = std::max(worst, a == b ? 0.0 : std::abs(a - b));
      }
    }
  return worst;
}

Observation Match(const TensorD& got, const std::vector<Rule>& rules, double tolerance, const std::vector<int>& rows) {
  std::vector<double> errors;
  std::string evidence;
  for (const Rule& rule : rules) {
    errors.push_back(Distance(got, rule.out, rows));
    evidence += fmt::format("{}|out − {}| = {:.3g}", evidence.empty() ? "" : ", ", rule.name, errors.back());
  }
  evidence += fmt::format(" (bound {:.3g})", tolerance);
  const auto best = std::min_element(errors.begin(), errors.end());
  if (best == errors.end() || *best > tolerance) {
    const int row = rows.empty() ? 0 : rows.front();
    std::string values;
    for (int d = 0; d < got.shape[3]; ++d) values += fmt::format("{}{:.6g}", d ? ", " : "", got.at(0, 0, row, d));
    return {"other", fmt::format("{}; out[h=0, i={}] = [{}]", evidence, row, values)};
  }
  const std::string& meaning = rules[best - errors.begin()].meaning;
  for (size_t r = 0; r < rules.size(); ++r) {
    if (rules[r].meaning != meaning && errors[r] <= 2.0 * tolerance) return {"undecided", evidence};
  }
  return {meaning, evidence};
}

}  // namespace attncheck::probe
