// Declared features (cases/features.h): one table of dimensions, each row listing
// the values the capabilities declare, how a case shows each, and the draws of
// Decode (cases/decode.h) that aim at it.
#include "cases/features.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "cases/decode.h"
#include "cases/random_source.h"

namespace attncheck {
namespace {

constexpr int64_t kAny = std::numeric_limits<int64_t>::max();

// The encodings Decode picks from under mask convention m ("encoding.kind").
std::vector<EncodingKind> EncodingTable(const Capabilities& caps, MaskConvention m) {
  return m == MaskConvention::kDescriptor ? decode_detail::DescriptorEncodings(caps) : caps.encodings;
}

// "encoding.kind" forced to `kind` under each mask whose table has it; empty when none has.
std::vector<ForcedDraw> SteerEncoding(const Capabilities& caps, EncodingKind kind) {
  std::vector<ForcedDraw> steer;
  for (size_t m = 0; m < caps.masks.size(); ++m) {
    const std::vector<EncodingKind> table = EncodingTable(caps, caps.masks[m]);
    const auto at = std::find(table.begin(), table.end(), kind);
    if (at == table.end()) continue;
    const int64_t e = at - table.begin();
    steer.push_back({"encoding.kind", e, e, "mask", static_cast<int64_t>(m)});
  }
  return steer;
}

// Mask convention: each one, when more than one is declared. The causal flags'
// alignments (top-left, bottom-right) are two of its values; a descriptor kernel
// declaring both alignments is handed bottom-right (reference/descriptor.cc), so
// for it the alignment is no choice a case makes.
std::vector<Feature> MaskFeatures(const Capabilities& caps, const LawNeeds&) {
  std::vector<Feature> features;
  if (caps.masks.size() < 2) return features;
  for (size_t m = 0; m < caps.masks.size(); ++m) {
    const MaskConvention mask = caps.masks[m];
    const int64_t index = static_cast<int64_t>(m);
    features.push_back({"mask", fmt::format("mask={}", Name(mask)), [mask](const Case& c) { return c.mask == mask; },
                        {{"mask", index, index}}});
  }
  return features;
}

// Encoding: ALiBi and RoPE under each declared scaling (one encoding per case).
std::vector<Feature> EncodingFeatures(const Capabilities& caps, const LawNeeds&) {
  std::vector<Feature> features;
  if (std::vector<ForcedDraw> steer = SteerEncoding(caps, EncodingKind::kAlibi); !steer.empty()) {
    features.push_back({"encoding", "alibi", [](const Case& c) { return c.encoding.kind == EncodingKind::kAlibi; },
                        std::move(steer)});
  }
  const std::vector<ForcedDraw> rope = SteerEncoding(caps, EncodingKind::kRope);
  if (rope.empty()) return features;
  const std::vector<RopeScaling> scalings =
      caps.rope_scalings.empty() ? std::vector<RopeScaling>{RopeScaling::kNone} : caps.rope_scalings;
  for (size_t s = 0; s < scalings.size(); ++s) {
    const RopeScaling scaling = scalings[s];
    std::vector<ForcedDraw> steer = rope;
    const int64_t index = static_cast<int64_t>(s);
    steer.push_back({"encoding.rope.scaling", index, index});
    features.push_back({"encoding", fmt::format("rope={}", Name(scaling)),
                        [scaling](const Case& c) {
                          return c.encoding.kind == EncodingKind::kRope && c.encoding.rope.scaling == scaling;
                        },
                        std::move(steer)});
  }
  return features;
}

bool OnlyDescriptor(const Capabilities& caps) {
  return std::all_of(caps.masks.begin(), caps.masks.end(), [](MaskConvention m) { return m == MaskConvention::kDescriptor; });
}

std::vector<Feature> SoftcapFeatures(const Capabilities& caps, const LawNeeds&) {
  if (!caps.softcap || (OnlyDescriptor(caps) && !caps.descriptor_forms.softcap)) return {};
  return {{"softcap", "softcap", [](const Case& c) { return c.softcap > 0.0; }, {{"softcap", 1, kAny}}}};
}

// GQA: fewer kv heads than query heads ("kv_heads" index 0 is q_heads itself).
std::vector<Feature> GqaFeatures(const Capabilities& caps, const LawNeeds&) {
  if (!caps.gqa || caps.max_heads < 2) return {};
  return {{"gqa", "gqa", [](const Case& c) { return c.kv_heads < c.q_heads; },
           {{"q_heads", 2, kAny}, {"kv_heads", 1, kAny}}}};
}

// Tq > Tk: leading queries, for a law whose scenarios handle them (LawNeeds).
std::vector<Feature> QueriesBeyondKeysFeatures(const Capabilities& caps, const LawNeeds& needs) {
  const bool bottom_right = std::any_of(caps.masks.begin(), caps.masks.end(),
                                        [](MaskConvention m) { return m != MaskConvention::kCausalTopLeft; });
  if (!caps.queries_beyond_keys || !needs.queries_beyond_keys || !bottom_right) return {};
  return {{"tq>tk", "tq>tk", [](const Case& c) { return c.query_len > c.key_len(); },
           {{"query_len.leading.on", 0, 0}}}};
}

// Sessions: a decode plan run through the cached-decode session, for a law that runs it.
std::vector<Feature> SessionFeatures(const Capabilities& caps, const LawNeeds& needs) {
  if (!caps.has_session || !needs.decode_plan) return {};
  return {{"session", "session", [](const Case& c) { return !c.decode_chunks.empty(); },
           {{"decode_chunks.enabled", 1, 1}}}};
}

// The draw that aims a case at the descriptor convention (empty when it is none of
// the kernel's; no draw is forced when it is the only one).
std::optional<std::vector<ForcedDraw>> SteerDescriptor(const Capabilities& caps) {
  const auto at = std::find(caps.masks.begin(), caps.masks.end(), MaskConvention::kDescriptor);
  if (at == caps.masks.end()) return std::nullopt;
  const int64_t index = at - caps.masks.begin();
  return std::vector<ForcedDraw>{{"mask", index, index}};
}

// One feature per declared value of a descriptor-only dimension (a layout, a page
// size), for a kernel declaring more than one: the case is a descriptor case whose
// `field` is the value, steered by the descriptor mask and the value's index in `draw`.
template <class T, class Field, class Label>
std::vector<Feature> DescriptorValueFeatures(const Capabilities& caps, std::string_view dimension,
                                            std::string_view draw, const std::vector<T>& values, Field field,
                                            Label label) {
  const std::optional<std::vector<ForcedDraw>> descriptor = SteerDescriptor(caps);
  if (!descriptor || values.size() < 2) return {};
  std::vector<Feature> features;
  for (size_t i = 0; i < values.size(); ++i) {
    const T value = values[i];
    std::vector<ForcedDraw> steer = *descriptor;
    steer.push_back({std::string(draw), static_cast<int64_t>(i), static_cast<int64_t>(i)});
    features.push_back({std::string(dimension), label(value),
                        [value, field](const Case& c) { return c.mask == MaskConvention::kDescriptor && field(c) == value; },
                        std::move(steer)});
  }
  return features;
}

// Descriptor layout: each one a kernel declaring several is handed (Case::layout);
// none for a law that packs documents (Decode keeps varlen, the only layout packing them).
std::vector<Feature> LayoutFeatures(const Capabilities& caps, const LawNeeds& needs) {
  if (needs.packed_documents) return {};
  return DescriptorValueFeatures(
      caps, "layout", "layout", DeclaredLayouts(caps.descriptor_forms), [](const Case& c) { return c.layout; },
      [](DescriptorLayout l) { return fmt::format("layout={}", Name(l)); });
}

// Page size: each one a paged kernel declaring several is handed (Case::page_size).
std::vector<Feature> PageSizeFeatures(const Capabilities& caps, const LawNeeds&) {
  return DescriptorValueFeatures(
      caps, "page size", "page_size", DeclaredPageSizes(caps.descriptor_forms), [](const Case& c) { return c.page_size; },
      [](int size) { return fmt::format("page_size={}", size); });
}

struct Dimension {
  std::string_view name;
  std::vector<Feature> (*declared)(const Capabilities&, const LawNeeds&);
};

// One row per dimension; a new dimension is one row and its function.
constexpr Dimension kDimensions[] = {
    {"mask", MaskFeatures},
    {"encoding", EncodingFeatures},
    {"softcap", SoftcapFeatures},
    {"gqa", GqaFeatures},
    {"tq>tk", QueriesBeyondKeysFeatures},
    {"session", SessionFeatures},
    {"layout", LayoutFeatures},
    {"page size", PageSizeFeatures},
};

// Pairs Decode never draws together, and why (cases/decode.h).
struct Exclusion {
  std::string_view first, second, why;
};
constexpr Exclusion kExclusions[] = {
    {"tq>tk", "mask=causal-top-left", "Decode draws Tq > Tk only where the causal diagonal is bottom-right"},
    {"session", "mask=causal-top-left", "Decode draws no decode plan under a top-left causal flag"},
    {"tq>tk", "session", "Decode draws no decode plan for a case with Tq > Tk"},
};

}  // namespace

std::vector<Feature> DeclaredFeatures(const Capabilities& caps, const LawNeeds& needs) {
  std::vector<Feature> features;
  for (const Dimension& d : kDimensions) {
    std::vector<Feature> values = d.declared(caps, needs);
    features.insert(features.end(), std::make_move_iterator(values.begin()), std::make_move_iterator(values.end()));
  }
  return features;
}

std::vector<std::string> FeaturesOf(const Case& c, const Capabilities& caps, const LawNeeds& needs) {
  std::vector<std::string> names;
  for (const Feature& f : DeclaredFeatures(caps, needs))
    if (f.has(c)) names.push_back(f.name);
  return names;
}

std::vector<FeaturePair> FeaturePairs(const std::vector<Feature>& features) {
  const auto size = [&](const std::string& dimension) {
    return std::count_if(features.begin(), features.end(), [&](const Feature& f) { return f.dimension == dimension; });
  };
  // The mask index a layout or page-size feature steers to (the descriptor's).
  const auto descriptor_mask = [](const Feature& f) -> std::optional<int64_t> {
    for (const ForcedDraw& d : f.steer)
      if (d.name == "mask" && d.if_draw.empty()) return d.lo;
    return std::nullopt;
  };
  std::vector<FeaturePair> pairs;
  for (size_t a = 0; a < features.size(); ++a) {
    for (size_t b = a + 1; b < features.size(); ++b) {
      const Feature &x = features[a], &y = features[b];
      if (x.dimension == y.dimension) continue;
      // A layout and a page size are a descriptor's: no pair with another convention.
      const auto descriptor_only = [](const Feature& f) { return f.dimension == "layout" || f.dimension == "page size"; };
      const auto other_mask = [](const Feature& f) { return f.dimension == "mask" && f.name != "mask=descriptor"; };
      if ((descriptor_only(x) && other_mask(y)) || (descriptor_only(y) && other_mask(x))) continue;
      FeaturePair pair{a, b, fmt::format("{} × {}", x.name, y.name), 1.0, ""};
      const auto exclusive = size(x.dimension) * size(y.dimension);
      pair.max_share = 1.0 / static_cast<double>(exclusive);
      if (exclusive > 1) {
        pair.limit = fmt::format("{} × {}: {} pairs that exclude each other", x.dimension, y.dimension, exclusive);
      }
      // An encoding the descriptor forms do not take (its steering names no descriptor
      // mask) is never drawn with a layout or a page size.
      for (const auto& [layout, encoding] : {std::pair{&x, &y}, std::pair{&y, &x}}) {
        if (!descriptor_only(*layout) || encoding->dimension != "encoding") continue;
        const std::optional<int64_t> mask = descriptor_mask(*layout);
        if (mask && std::none_of(encoding->steer.begin(), encoding->steer.end(), [&](const ForcedDraw& d) {
              return d.if_draw == "mask" && d.if_value == *mask;
            })) {
          pair.max_share = 0.0;
          pair.limit = fmt::format("the descriptor forms take no {}", encoding->name);
        }
      }
      for (const Exclusion& e : kExclusions) {
        if ((x.name == e.first && y.name == e.second) || (x.name == e.second && y.name == e.first)) {
          pair.max_share = 0.0;
          pair.limit = std::string(e.why);
        }
      }
      pairs.push_back(std::move(pair));
    }
  }
  return pairs;
}

std::vector<ForcedDraw> Steering(const std::vector<Feature>& features, const FeaturePair& pair) {
  std::vector<ForcedDraw> steer = features[pair.first].steer;
  const std::vector<ForcedDraw>& second = features[pair.second].steer;
  steer.insert(steer.end(), second.begin(), second.end());
  return steer;
}

std::optional<size_t> SteeredPair(uint64_t index, size_t pairs) {
  if (pairs == 0 || index < kUnsteeredFirst) return std::nullopt;
  index -= kUnsteeredFirst;
  if (index % kSteeredCycle >= kSteeredPerCycle) return std::nullopt;
  const uint64_t steered = index / kSteeredCycle * kSteeredPerCycle + index % kSteeredCycle;
  return static_cast<size_t>(steered % pairs);
}

FeatureSteering::FeatureSteering(const Capabilities& caps, const LawNeeds& needs, uint64_t stream_seed)
    : features_(DeclaredFeatures(caps, needs)), pairs_(FeaturePairs(features_)) {
  if (pairs_.empty()) return;
  std::vector<int> drawn(pairs_.size()), features_drawn(features_.size());
  for (uint64_t k = 0; k < kEstimateCases; ++k) {  // the unsteered indices kSteeredPerCycle, … of the stream
    RandomSource source(stream_seed, k * kSteeredCycle + kSteeredPerCycle);
    const Case c = Decode(source, caps, needs);
    std::vector<bool> has(features_.size());
    for (size_t f = 0; f < features_.size(); ++f) {
      has[f] = features_[f].has(c);
      features_drawn[f] += has[f] ? 1 : 0;
    }
    for (size_t p = 0; p < pairs_.size(); ++p) drawn[p] += has[pairs_[p].first] && has[pairs_[p].second] ? 1 : 0;
  }
  // The schedule, greedily (cases/features.h kTurnsPerRarePair): each next turn goes to
  // the rare pair whose projected share is lowest against kSteerTarget (or its
  // max_share, where exclusive values keep it lower): every prefix is balanced.
  std::vector<double> natural(pairs_.size()), marginal(features_.size());
  for (size_t p = 0; p < pairs_.size(); ++p) natural[p] = static_cast<double>(drawn[p]) / kEstimateCases;
  for (size_t f = 0; f < features_.size(); ++f) marginal[f] = static_cast<double>(features_drawn[f]) / kEstimateCases;
  std::vector<size_t> rare;
  for (size_t p = 0; p < pairs_.size(); ++p)
    if (pairs_[p].max_share > 0.0 && natural[p] < kSteerBelow) rare.push_back(p);
  if (rare.empty()) return;
  // hit[r][p]: the share of cases steered toward rare pair r that have pair p (r's two
  // features forced; another feature of their dimensions excluded; the rest as drawn)
  const auto dimension = [&](size_t f) -> const std::string& { return features_[f].dimension; };
  std::vector<std::vector<double>> hit(rare.size(), std::vector<double>(pairs_.size(), 0.0));
  for (size_t r = 0; r < rare.size(); ++r) {
    const FeaturePair& q = pairs_[rare[r]];
    for (size_t p = 0; p < pairs_.size(); ++p) {
      double share = 1.0;
      int free = 0;
      for (const size_t f : {pairs_[p].first, pairs_[p].second}) {
        if (f == q.first || f == q.second) continue;
        if (dimension(f) == dimension(q.first) || dimension(f) == dimension(q.second)) share = 0.0;
        share *= marginal[f];
        ++free;
      }
      hit[r][p] = free == 2 && share > 0.0 ? natural[p] : share;
    }
  }
  std::vector<double> steered_hits(pairs_.size(), 0.0);  // Σ over the turns so far of hit[turn][p]
  const size_t length = kTurnsPerRarePair * rare.size();
  for (size_t n = 0; n < length; ++n) {
    size_t best = 0;
    double lowest = std::numeric_limits<double>::infinity();
    for (size_t r = 0; r < rare.size(); ++r) {
      const size_t p = rare[r];
      const double projected = (1.0 - kSteeredShare) * natural[p] +
                               (n == 0 ? 0.0 : kSteeredShare * steered_hits[p] / static_cast<double>(n));
      const double need = std::min(kSteerTarget, pairs_[p].max_share);
      if (projected / need < lowest) {
        lowest = projected / need;
        best = r;
      }
    }
    steering_.push_back(Steering(features_, pairs_[rare[best]]));
    for (size_t p = 0; p < pairs_.size(); ++p) steered_hits[p] += hit[best][p];
  }
}

Case FeatureSteering::Draw(uint64_t stream_seed, uint64_t index, const Capabilities& caps,
                           const LawNeeds& needs) const {
  RandomSource source(stream_seed, index);
  if (const std::optional<size_t> pair = SteeredPair(index, steering_.size())) {
    SteeredSource<RandomSource> steered(source, steering_[*pair]);
    return Decode(steered, caps, needs);
  }
  return Decode(source, caps, needs);
}

std::vector<std::string> FeatureSteering::PairsOf(const Case& c) const {
  std::vector<bool> has(features_.size());
  for (size_t f = 0; f < features_.size(); ++f) has[f] = features_[f].has(c);
  std::vector<std::string> names;
  for (const FeaturePair& pair : pairs_)
    if (has[pair.first] && has[pair.second]) names.push_back(pair.name);
  return names;
}

}  // namespace attncheck
