// The result of checking one law on one case (DESIGN §6): pass | fail | skip
// (with a reason) | error (the adapter crashed, threw or answered garbage), the
// measured error against its bound at the worst element, and a message a person
// can act on.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cases/accuracy.h"
#include "cases/case.h"
#include "properties/outcome.h"

namespace attncheck {

// The element a verdict measured worst: `tensor` names what it is an element of
// and (b, h, i, j) is its full index there, −1 where a dim is not meaningful:
//   "out" [B, Hq, Tq, Dv]: query row i, value dim j;  "q" / "k" [B, H, T, D]:
//   token i, dim j;  "score" [B, Hq, Tq, Tk]: query i, key slot j.
// A leak law names the key slot that leaked into the element in `key`.
struct WorstElement {
  int b = -1, h = -1, i = -1, j = -1;
  double got = 0.0, want = 0.0, error = 0.0, bound = 0.0;
  std::string tensor = "";  // empty when no element was compared
  int key = -1;        // key slot whose perturbation reached the element, −1 when none
  // report data: the element's whole row out[b, h, i, ·] on both sides of the
  // comparison (got, want), where the law compared rows of "out"; empty otherwise.
  std::vector<double> row_got = {}, row_want = {};

  // The "j" of summaries and fuzz records: the leaking key slot when there is
  // one, else j (the meaning those formats have always had).
  int reported_j() const { return key >= 0 ? key : j; }
  // What j indexes, for reports: "d" (a dim) in "out", "q", "k"; else "j".
  std::string_view last_index() const { return tensor == "out" || tensor == "q" || tensor == "k" ? "d" : "j"; }
};
// "out[b=0, h=1, i=2, j=3]", then "; key slot 5 reached it" for a leak; empty
// when no element was compared. For reports.
std::string Describe(const WorstElement& e);

// Per query row error of a differential comparison (report data): for each
// (b, h, i) the largest |got − want| over the value dims and that error over its
// bound (> 1 = the row breaks the tolerance). Empty when not measured.
struct RowErrors {
  int batch = 0, heads = 0, tq = 0;  // shape [B, Hq, Tq] of the two vectors
  std::vector<double> max_abs;       // [B, Hq, Tq]
  std::vector<double> ratio;         // [B, Hq, Tq] max |got − want| / bound; NaN where the row was not compared
  std::string what;                  // what was compared ("attention vs oracle")

  bool empty() const { return max_abs.empty(); }
  size_t index(int b, int h, int i) const { return (static_cast<size_t>(b) * heads + h) * tq + i; }
};

struct Verdict {
  Outcome outcome = Outcome::kPass;
  double max_abs = 0.0;  // max |got − want|
  double max_rel = 0.0;  // max |got − want| / max(|want|, tiny)
  double bound = 0.0;    // bound at the worst element
  WorstElement worst;
  std::string message;   // one or a few lines; empty on pass
  Fault fault = Fault::kNone;  // set on kError verdicts
  // report data: expected visibility [B, Tq, Tk] and, for leak laws, the
  // measured influence map [B, Tq, Tk] (1 = perturbing key j changed row i)
  std::vector<uint8_t> expected_visibility;
  std::vector<uint8_t> influence;
  // report data of differential laws: the per-row error of the failing comparison
  RowErrors row_errors;
  // report data of a law that ran another case than the one it was given
  // (masked-rows adds a pad query and a batch row of pads; decode-consistency
  // makes every slot a query): that case, and the steps of a cached-decode
  // session the law compared (prefill, then the chunks appended).
  std::optional<Case> ran_case;
  std::vector<int> decode_steps;

  bool passed() const { return outcome == Outcome::kPass; }
  bool failed() const { return outcome == Outcome::kFail; }
  bool skipped() const { return outcome == Outcome::kSkip; }
  bool hazard() const { return outcome == Outcome::kHazard; }

  static Verdict Pass() { return {}; }
  static Verdict Skip(std::string why) {
    Verdict v;
    v.outcome = Outcome::kSkip;
    v.message = std::move(why);
    return v;
  }
  // A failing verdict: the message and, where measured, the worst element, the
  // largest error, the bound at the worst element and the largest relative error.
  static Verdict Fail(std::string message, const WorstElement& worst = {}, double max_abs = 0.0,
                      double bound = 0.0, double max_rel = 0.0) {
    Verdict v;
    v.outcome = Outcome::kFail;
    v.message = std::move(message);
    v.worst = worst;
    v.max_abs = max_abs;
    v.bound = bound;
    v.max_rel = max_rel;
    return v;
  }
  // A hazard: Fail's fields, for behaviour the adapter's contract allows but that
  // is dangerous in practice (properties/outcome.h).
  static Verdict Hazard(std::string message, const WorstElement& worst = {}, double max_abs = 0.0,
                        double bound = 0.0, double max_rel = 0.0) {
    Verdict v = Fail(std::move(message), worst, max_abs, bound, max_rel);
    v.outcome = Outcome::kHazard;
    return v;
  }
  static Verdict Error(std::string why, Fault fault = Fault::kException) {
    Verdict v;
    v.outcome = Outcome::kError;
    v.fault = fault;
    v.message = std::move(why);
    return v;
  }
};

// Options every law takes.
struct Options {
  double k = 2.0;               // row bound = k·max|naive − oracle| + floor (properties/tolerance.h)
  Accuracy accuracy;            // the adapter's declared accuracy: the naive model computes so
  bool owns_encoding = true;    // the adapter encodes q, k itself (its rounding of them is its own)
  int perturbations = 2;        // non-interference: perturbations per blocked key set
  bool influence_map = false;   // compute the per-key influence map for the report (slower)
};

}  // namespace attncheck
