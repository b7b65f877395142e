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

#include <fmt/format.h>

#include "cases/accuracy.h"
#include "cases/case.h"
#include "properties/outcome.h"
#include "properties/signature.h"

namespace attncheck {

// The element a verdict measured worst: `tensor` names what it is an element of
// and (b, h, i, j) is its full index there, −1 where a dim is not meaningful:
//   "out" [B, Hq, Tq, Dv]: query row i, value dim j;  "q" / "k" [B, H, T, D]:
//   token i, dim j;  "score" [B, Hq, Tq, Tk]: query i, key slot j;  the backward's
//   "dq" [B, Hq, Tq, D]: query row i, dim j;  "dk" / "dv" [B, Hkv, Tk, ·]: kv head
//   h, key slot i, dim j.
// A leak law names the key slot that leaked into the element in `key`.
// Built by the named constructors only, so the error is always |got − want| as
// measured (never a placeholder); printed by its fmt formatter, one form for
// every writer.
struct WorstElement {
  int b = -1, h = -1, i = -1, j = -1;
  double got = 0.0, want = 0.0, error = 0.0, bound = 0.0;
  std::string tensor = "";  // empty when no element was compared
  int key = -1;        // key slot whose perturbation reached the element, −1 when none
  // report data: the element's whole row out[b, h, i, ·] on both sides of the
  // comparison (got, want), where the law compared rows of "out"; empty otherwise.
  std::vector<double> row_got = {}, row_want = {};

  WorstElement() = default;  // no element compared
  // got against want at tensor[b, h, i, j] under `bound` (0: must match
  // bitwise); error = |got − want|, +inf when exactly one side is not finite or
  // both are but differ in kind.
  static WorstElement Compared(std::string_view tensor, int b, int h, int i, int j, double got, double want,
                               double bound);
  // The same, for a value that key slot `key` reached although it may not.
  static WorstElement Leak(std::string_view tensor, int b, int h, int i, int j, double got, double want, int key);
  // A whole row whose bound is `bound` and whose values reach `magnitude` (want).
  static WorstElement Row(std::string_view tensor, int b, int h, int i, double bound, double magnitude);

  // The "j" of summaries and fuzz records: the leaking key slot when there is
  // one, else j (the meaning those formats have always had).
  int reported_j() const { return key >= 0 ? key : j; }
  // Whether the tensor has a last index at all ("lse" holds one value per row).
  bool has_last_index() const { return tensor != "lse"; }
  // What j indexes, for reports: "d" (a dim) in "out", "q", "k"; else "j".
  std::string_view last_index() const {
    return tensor == "out" || tensor == "q" || tensor == "k" || tensor == "dq" || tensor == "dk" || tensor == "dv" ? "d"
                                                                                                                   : "j";
  }
};
// |got − want|, +inf where the two differ in finiteness (NaN against a number).
double ElementError(double got, double want);
// Whether a bound means "must match bitwise" (0, or the smallest positive floor).
bool BitwiseBound(double bound);
// A bound as reports print it: "bitwise" for a bitwise law, else the number.
std::string BoundText(double bound);
// The element's one printed form (its fmt formatter); empty when no element was compared.
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
  // the influence map is of the backward call: 1 = a query row's upstream gradient
  // reached dk or dv of key j (a row must give gradient only to keys it can see)
  bool influence_of_gradients = false;
  // report data of differential laws: the per-row error of the failing comparison
  RowErrors row_errors;
  // report data of a law that ran another case than the one it was given
  // (masked-rows adds a pad query and a batch row of pads; decode-consistency
  // makes every slot a query): that case, and the steps of a cached-decode
  // session the law compared (prefill, then the chunks appended).
  std::optional<Case> ran_case;
  std::vector<int> decode_steps;
  bool decode_over_caller_cache = false;  // the steps were attention() calls over the caller's cache, not a session
  // The signature's parts the law sets where it fails (properties/signature.h):
  // the comparison step, the role of the worst element, and the convention the
  // failing call ran in when it is not the case's own.
  std::string step;
  Role role = Role::kNone;
  std::optional<MaskConvention> mask;
  // report data: where the law measured which keys a row read (influence), the
  // keys a row with no visible key may read under the adapter's contract (a
  // finite fill under "neg-inf" blocking, policy mean-v): then such reads are
  // drawn as policy, else as leaks.
  bool empty_rows_may_read = false;

  bool passed() const { return outcome == Outcome::kPass; }
  bool failed() const { return outcome == Outcome::kFail; }
  bool skipped() const { return outcome == Outcome::kSkip; }
  bool hazard() const { return outcome == Outcome::kHazard; }

  // Sets the failing step and the worst element's role; returns *this.
  Verdict& At(std::string_view failing_step, Role worst_role) {
    step = std::string(failing_step);
    role = worst_role;
    return *this;
  }

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
    Verdict v;  // bound 0: the law compares bitwise
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
  // Both runs a metamorphic law compares rotate each token at the same position
  // (SharedAngles): the adapter's float RoPE angle error is the same on both sides and
  // cancels in CheckSelf, so the floor leaves it out (properties/tolerance.h).
  bool shared_angles = false;
  int perturbations = 2;        // non-interference: perturbations per blocked key set
  bool influence_map = false;   // compute the per-key influence map for the report (slower)
};

}  // namespace attncheck

template <>
struct fmt::formatter<attncheck::WorstElement> : fmt::formatter<std::string_view> {
  // "out[b=0, h=1, i=2, d=3] got 0.619 want 0 error 0.619 bound bitwise; key slot 5 reached it"
  auto format(const attncheck::WorstElement& e, fmt::format_context& ctx) const -> decltype(ctx.out()) {
    return fmt::formatter<std::string_view>::format(attncheck::Describe(e), ctx);
  }
};
