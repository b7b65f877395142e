// What the harness can hand an adapter (harness.h, harness_internal.h): the
// capabilities a case needs, whether a mask convention or a causal flag expresses
// a scenario's visibility in one call or in every session step, and whether a
// finite fill still blocks the scenario's scores.
#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <numeric>
#include <stdexcept>

#include "adapters/harness_internal.h"
#include "cases/accuracy.h"
#include "reference/attention.h"
#include "reference/descriptor.h"
#include "reference/mask.h"
#include "reference/positional.h"

namespace attncheck {
namespace {

using harness::Contains;

// Margin of a finite fill beyond a row's scores: e^−128 < 2^−150, so a blocked
// key's weight exp(S_blocked + fill − max_visible S) rounds to 0 in f32 and bf16
// (smallest subnormal 2^−149, e^−103.3) and far more so in f16. The kernel computes
// scores and adds the fill in its dtype: kRoundingUlps unit roundoffs of the
// magnitudes in play (the fill, the key's score, the row's best) are added to it.
constexpr double kFillMargin = 128.0;
constexpr double kRoundingUlps = 4.0;

// How a finite fill meets a scenario's scores (FillHeadroom, WhyFillCannotBlock).
struct FillReach {
  double headroom = 0.0;  // how far every score may still move with each blocked key still blocked
  double spread = 0.0;    // the blocked key with the least headroom: its score above its row's best visible one
  double needed = 0.0;    // and what the fill's magnitude must exceed that by
};

// A fill blocks key j of row i when S_ij + fill lies below the row's best visible
// score by more than the margin and the rounding of the three magnitudes:
//   S_ij − best_i < |fill| − kFillMargin − kRoundingUlps·u·(|fill| + |S_ij| + |best_i|).
// Rows that see no key are the masked-rows convention's, not this rule's. The scores are
// the reference's (reference/attention.h: scale, softcap, score bias) from q and k as
// encoded for the adapter, in double; the cheap Cauchy–Schwarz bound (every blocked key
// at +max|S|, every visible one at −max|S|) stands where it leaves headroom beyond `enough`.
FillReach ReachOfFill(const reference::Scenario& s, double fill, double enough) {
  TensorD encoded_q, encoded_k;  // the scenario's own q and k when nothing encodes them (no copy)
  const bool encoded = reference::HasQkEncoding(s.c);
  if (encoded) reference::EncodeQk(s, encoded_q, encoded_k);
  const TensorD& q = encoded ? encoded_q : s.q;
  const TensorD& k = encoded ? encoded_k : s.k;
  const bool has_bias = reference::HasScoreBias(s.c);
  const std::shared_ptr<const TensorD> bias = has_bias ? reference::SharedBiasTensor(s) : nullptr;
  const int hq = q.shape[1], group = hq / k.shape[1], d = q.shape[3];
  const double scale = s.c.effective_scale(), softcap = s.c.softcap;
  const double rounding = kRoundingUlps * UnitRoundoff(s.c.dtype);
  auto max_norm = [d](const TensorD& t) {
    double largest = 0.0;
    for (size_t row = 0; row * d < t.data.size(); ++row) {
      double sum = 0.0;
      for (int e = 0; e < d; ++e) sum += t.data[row * d + e] * t.data[row * d + e];
      largest = std::max(largest, sum);
    }
    return std::sqrt(largest);
  };
  double max_bias = 0.0;
  if (has_bias)
    for (double x : bias->data) max_bias = std::max(max_bias, std::abs(x));
  double dot_bound = scale * max_norm(q) * max_norm(k);
  if (softcap > 0.0) dot_bound = std::min(dot_bound, softcap);
  const double bound = dot_bound + max_bias;
  FillReach reach;
  reach.spread = 2.0 * bound;
  reach.needed = kFillMargin + rounding * (-fill + 2.0 * bound);
  reach.headroom = (-fill - reach.needed - reach.spread) / 2.0;
  if (reach.headroom > enough) return reach;

  reach.headroom = std::numeric_limits<double>::infinity();  // until a row that sees a key blocks one
  std::vector<double> row(static_cast<size_t>(s.tk));
  for (int b = 0; b < s.batch; ++b)
    for (int h = 0; h < hq; ++h)
      for (int i = 0; i < s.tq; ++i) {
        double best = -std::numeric_limits<double>::infinity();
        for (int j = 0; j < s.tk; ++j) {
          double dot = 0.0;
          for (int e = 0; e < d; ++e) dot += q.at(b, h, i, e) * k.at(b, h / group, j, e);
          double score = scale * dot;
          if (softcap > 0.0) score = softcap * std::tanh(score / softcap);
          if (has_bias) score += bias->at(b, h, i, j);
          row[j] = score;
          if (s.is_visible(b, i, j)) best = std::max(best, score);
        }
        if (!std::isfinite(best)) continue;  // sees no key
        for (int j = 0; j < s.tk; ++j) {
          if (s.is_visible(b, i, j)) continue;
          const double spread = row[j] - best, needed = kFillMargin + rounding * (-fill + std::abs(row[j]) + std::abs(best));
          const double headroom = (-fill - needed - spread) / 2.0;
          if (!(headroom >= reach.headroom)) reach = {headroom, spread, needed};  // NaN scores count as unblocked
        }
      }
  return reach;
}

// A blocked key whose score sits within |fill| − needed of its row's best visible
// key is not blocked by the fill for a kernel that adds it to the score, while the
// oracle treats blocked as blocked: the run is refused.
std::optional<std::string> WhyFillCannotBlock(const reference::Scenario& s, MaskConvention convention) {
  if (!IsAdditive(convention)) return std::nullopt;
  const double fill = reference::AdditiveFill(convention, s.c.dtype);
  if (!std::isfinite(fill) || s.q.data.empty()) return std::nullopt;
  const FillReach reach = ReachOfFill(s, fill, 0.0);
  if (reach.headroom > 0.0) return std::nullopt;
  return fmt::format("mask fill {:g} of {} cannot block: a blocked key scores {:.6g} above its row's best visible "
                     "key (needs below {:.6g})",
                     fill, Name(convention), reach.spread, -fill - reach.needed);
}

}  // namespace

namespace harness {

void CheckDecodeSteps(std::span<const int> steps, int tk) {
  const int total = std::accumulate(steps.begin(), steps.end(), 0);
  if (total != tk || std::any_of(steps.begin(), steps.end(), [](int n) { return n < 0; })) {
    throw std::invalid_argument(fmt::format("harness: decode steps sum to {}, not Tk = {}", total, tk));
  }
}

StepQueries QueriesOfStep(const reference::Scenario& s, int cached, int n) {
  const int past = s.tk - s.tq;  // the query slots among the appended ones: a suffix of the step
  return {std::max(cached, past) - past, cached + n - past};
}

// Why causal flag `convention` is not the scenario's visibility in some session
// step (nullopt for every other convention): in a step, the flag's rule over the
// step's queries (a suffix of its keys, as RunSession slices them) and the keys so far.
std::optional<std::string> WhyFlagCannotExpressSteps(const reference::Scenario& s, std::span<const int> steps,
                                                     MaskConvention convention) {
  if (!IsCausalFlag(convention)) return std::nullopt;
  int keys = 0;
  for (int n : steps) {
    const auto [i0, i1] = QueriesOfStep(s, keys, n);
    keys += n;
    if (i1 <= i0) continue;
    const std::vector<uint8_t> pattern = reference::CausalFlagPattern(convention, i1 - i0, keys);
    for (int b = 0; b < s.batch; ++b)
      for (int i = i0; i < i1; ++i)
        for (int j = 0; j < keys; ++j)
          if ((pattern[static_cast<size_t>(i - i0) * keys + j] != 0) != s.is_visible(b, i, j)) {
            return fmt::format("{} in a decode step of {} queries over {} keys is not the case's visibility",
                               Name(convention), i1 - i0, keys);
          }
  }
  return std::nullopt;
}

}  // namespace harness

std::optional<std::string> WhyUnsupported(const Adapter& adapter, const Case& c) {
  const Capabilities caps = adapter.capabilities();
  if (!Contains(caps.dtypes, c.dtype)) return fmt::format("dtype {} not supported", Name(c.dtype));
  if (!Contains(caps.masks, c.mask)) return fmt::format("mask convention {} not accepted", Name(c.mask));
  const EncodingKind kind = c.encoding.kind;
  if (!Contains(caps.encodings, kind)) return fmt::format("encoding {} not supported", Name(kind));
  // Layouts and scalings only limit an adapter that rotates itself; otherwise
  // the harness hands over q and k already encoded by the reference.
  if ((kind == EncodingKind::kRope || kind == EncodingKind::kXpos) && caps.owns_rope) {
    if (!Contains(caps.rope_layouts, c.encoding.rope.layout)) {
      return fmt::format("RoPE layout {} not supported", Name(c.encoding.rope.layout));
    }
    if (!Contains(caps.rope_scalings, c.encoding.rope.scaling)) {
      return fmt::format("RoPE scaling {} not supported", Name(c.encoding.rope.scaling));
    }
  }
  if (c.kv_heads != c.q_heads && !caps.gqa) {
    return fmt::format("grouped-query attention (Hq={}, Hkv={}) not supported", c.q_heads, c.kv_heads);
  }
  if (c.softcap != 0.0 && !caps.softcap) return std::string("softcap not supported");
  if (c.value_dim != c.head_dim && !caps.value_dim_differs) {
    return fmt::format("value dim {} != head dim {} not supported", c.value_dim, c.head_dim);
  }
  if (c.query_len > c.key_len() && !caps.queries_beyond_keys) {
    return fmt::format("Tq {} > Tk {} not supported (queries_beyond_keys)", c.query_len, c.key_len());
  }
  return adapter.unsupported(c);
}

std::optional<std::string> WhyUnsupported(const Adapter& adapter, const reference::Scenario& s,
                                          MaskConvention convention) {
  std::optional<Case> relaid;  // the case in `convention`, when that is not its own
  if (convention != s.c.mask) {
    relaid = s.c;
    relaid->mask = convention;
  }
  const Case& c = relaid ? *relaid : s.c;
  if (std::optional<std::string> why = WhyUnsupported(adapter, c)) return why;
  if (IsCausalFlag(convention)) {
    const std::vector<uint8_t> pattern = reference::CausalFlagPattern(convention, s.tq, s.tk);
    for (int b = 0; b < s.batch; ++b)
      for (int i = 0; i < s.tq; ++i)
        for (int j = 0; j < s.tk; ++j)
          if ((pattern[static_cast<size_t>(i) * s.tk + j] != 0) != s.is_visible(b, i, j)) {
            return std::string("causal-flag convention cannot express padding/documents/non-causal visibility");
          }
  }
  if (convention == MaskConvention::kDescriptor) {
    std::string why;
    if (!reference::Describe(c, adapter.capabilities().descriptor_forms, &why)) return "descriptor: " + why;
  }
  if (reference::HasScoreBias(c) && !adapter.capabilities().owns_bias && !IsAdditive(convention)) {
    return fmt::format("score bias {} needs an additive mask convention, not {}", Name(c.encoding.kind),
                       Name(convention));
  }
  return WhyFillCannotBlock(s, convention);
}

double FillHeadroom(const reference::Scenario& s, MaskConvention convention) {
  constexpr double kUnlimited = std::numeric_limits<double>::infinity();
  if (!IsAdditive(convention) || s.q.data.empty()) return kUnlimited;
  const double fill = reference::AdditiveFill(convention, s.c.dtype);
  if (!std::isfinite(fill)) return kUnlimited;
  return ReachOfFill(s, fill, -fill / 8.0).headroom;
}

std::optional<std::string> WhySessionCannotExpress(const reference::Scenario& s, std::span<const int> steps) {
  std::vector<int> step_end(static_cast<size_t>(s.tk), s.tk);  // key slot → end of its step
  int t0 = 0;
  for (int n : steps) {
    for (int t = t0; t < std::min(t0 + n, s.tk); ++t) step_end[static_cast<size_t>(t)] = t0 + n;
    t0 += n;
  }
  for (int b = 0; b < s.batch; ++b)
    for (int i = 0; i < s.tq; ++i)
      for (int j = 0; j < s.tk; ++j)
        if (s.is_visible(b, i, j) && j >= step_end[static_cast<size_t>(s.query_slot(i))]) {
          return fmt::format("query {} of row {} reads key slot {}, appended in a later decode step", i, b, j);
        }
  return std::nullopt;
}

std::optional<std::string> WhySessionCannotExpress(const reference::Scenario& s, std::span<const int> steps,
                                                   MaskConvention convention) {
  if (std::optional<std::string> why = WhySessionCannotExpress(s, steps)) return why;
  return harness::WhyFlagCannotExpressSteps(s, steps, convention);
}

std::vector<int> SessionSteps(const Case& c) {
  const int tk = c.key_len();
  if (c.decode_chunks.empty()) return {tk};
  const int chunks = std::accumulate(c.decode_chunks.begin(), c.decode_chunks.end(), 0);
  std::vector<int> steps;
  if (tk - chunks != 0) steps.push_back(tk - chunks);
  for (int chunk : c.decode_chunks) steps.push_back(chunk);
  return steps;
}

}  // namespace attncheck
