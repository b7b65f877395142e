// Seed encoding: the inverse of FdpSource + Decode. EncodeCase finds the draws
// that make Decode(FdpSource, caps) give a target case (a corpus seed, a
// regression) and writes them as the bytes FdpSource reads, so each libFuzzer
// target starts from the hand-picked boundary cases of corpora/seeds/.
//
// Two ways, the better kept: an inverse decoder (GuidedSource) answers each
// labelled draw of Decode with the value that gives the target's field, exact
// for every case Decode can draw; for a case outside the capabilities, a beam
// search over draw prefixes (the rest of the draws at their minimum) scores
// each partial decode by how many JSON fields of the target it matches, trying
// every value of a small range and, for a wide one, the integers the target's
// JSON holds (and their halves). The nearest decoded case is kept and `exact`
// says whether it is the target.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "cases/capabilities.h"
#include "cases/case.h"
#include "cases/case_json.h"
#include "cases/decode.h"
#include "fuzz/fdp_source.h"

namespace attncheck {

// Appends the bytes FdpSource::Int(lo, hi) reads back as `value` (clamped to [lo, hi]).
inline void AppendFdpInt(std::vector<uint8_t>& bytes, int64_t lo, int64_t hi, int64_t value) {
  const int width = FdpIntWidth(lo, hi);
  const int64_t v = std::clamp(value, lo, std::max(lo, hi));
  uint64_t offset = static_cast<uint64_t>(v) - static_cast<uint64_t>(lo);
  for (int i = 0; i < width; ++i) {
    bytes.push_back(static_cast<uint8_t>(offset & 0xffu));
    offset >>= 8;
  }
}

// Appends the byte FdpSource::Bool reads back as `value`.
inline void AppendFdpBool(std::vector<uint8_t>& bytes, bool value) { bytes.push_back(value ? 1 : 0); }

namespace seed_detail {

// One draw a Decode made: its range (Bool is [0, 1]) and the value given.
struct Draw {
  int64_t lo = 0, hi = 0, value = 0;
  bool is_bool = false;
};

// Answers draw n with script[n] (clamped into range), then minimums, and
// records every draw that consumes bytes in FdpSource (hi > lo, and Bool).
class ScriptedSource {
 public:
  explicit ScriptedSource(const std::vector<int64_t>& script) : script_(script) {}
  int64_t Int(int64_t lo, int64_t hi, std::string_view) {
    if (hi <= lo) return lo;
    const int64_t v = Next(lo, hi);
    draws_.push_back({lo, hi, v, false});
    return v;
  }
  bool Bool(std::string_view) {
    const bool v = Next(0, 1) != 0;
    draws_.push_back({0, 1, v ? 1 : 0, true});
    return v;
  }
  const std::vector<Draw>& draws() const { return draws_; }

 private:
  int64_t Next(int64_t lo, int64_t hi) {
    const size_t n = draws_.size();
    return n < script_.size() ? std::clamp(script_[n], lo, hi) : lo;
  }
  const std::vector<int64_t>& script_;
  std::vector<Draw> draws_;
};

// JSON leaves by path ("rows/1/documents/0" → "3").
inline void Flatten(const nlohmann::json& j, const std::string& path, std::map<std::string, std::string>& out) {
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) Flatten(it.value(), path + "/" + it.key(), out);
  } else if (j.is_array()) {
    out[path + "#"] = std::to_string(j.size());
    for (size_t i = 0; i < j.size(); ++i) Flatten(j[i], path + "/" + std::to_string(i), out);
  } else {
    out[path] = j.dump();
  }
}

// The JSON leaves plus quantities Decode draws that the JSON only implies
// (the key length, which every row's pads and documents add up to).
inline std::map<std::string, std::string> Fields(const Case& c) {
  std::map<std::string, std::string> fields;
  Flatten(ToJson(c), "", fields);
  fields["@key_len"] = std::to_string(c.key_len());
  for (size_t b = 0; b < c.rows.size(); ++b) {
    fields["@rows/" + std::to_string(b) + "/documents#"] = std::to_string(c.rows[b].documents.size());
  }
  return fields;
}

// Target fields matched minus fields the candidate has and the target lacks.
inline int Similarity(const std::map<std::string, std::string>& target, const Case& c) {
  const std::map<std::string, std::string> got = Fields(c);
  int score = 0;
  for (const auto& [path, value] : got) {
    const auto it = target.find(path);
    if (it == target.end()) {
      --score;
    } else if (it->second == value) {
      ++score;
    }
  }
  return score;
}

inline void CollectIntegers(const nlohmann::json& j, std::set<int64_t>& out) {
  if (j.is_structured()) {
    for (const nlohmann::json& child : j) CollectIntegers(child, out);
  } else if (j.is_number_integer()) {
    out.insert(j.get<int64_t>());
  } else if (j.is_number_unsigned()) {
    const uint64_t u = j.get<uint64_t>();
    if (u <= static_cast<uint64_t>(INT64_MAX)) out.insert(static_cast<int64_t>(u));
  }
}

// Values worth trying for a draw in [lo, hi]: all of a small range, else the
// ends and the target's integers (and halves) that fall inside.
inline std::vector<int64_t> Candidates(int64_t lo, int64_t hi, const std::set<int64_t>& integers) {
  constexpr int64_t kEnumerate = 40;
  std::vector<int64_t> out;
  if (hi - lo <= kEnumerate) {
    for (int64_t v = lo; v <= hi; ++v) out.push_back(v);
    return out;
  }
  std::set<int64_t> picked = {lo, hi};
  for (int64_t x : integers) {
    for (int64_t v : {x, x / 2}) {
      if (v >= lo && v <= hi) picked.insert(v);
    }
  }
  return {picked.begin(), picked.end()};
}

// Position of `value` in `table` (0 when absent). Clipped tables of Decode are
// sorted prefixes of these, so the index is the same in the clipped one.
template <class T, class Table>
int64_t IndexOf(const Table& table, const T& value) {
  int64_t i = 0;
  for (const auto& entry : table) {
    if (entry == value) return i;
    ++i;
  }
  return 0;
}

// Answers each draw by its label with the value that makes Decode give the
// target (the inverse of cases/decode.h, draw by draw); records draws as
// ScriptedSource does. Unknown labels get their minimum. Exact for every case
// Decode can draw; a case outside the capabilities gets clamped answers.
class GuidedSource {
 public:
  GuidedSource(const Case& target, const Capabilities& caps) : t_(target), caps_(caps) {}

  int64_t Int(int64_t lo, int64_t hi, std::string_view name) {
    if (hi <= lo) return lo;
    const int64_t v = std::clamp(Answer(name), lo, hi);
    draws_.push_back({lo, hi, v, false});
    return v;
  }
  bool Bool(std::string_view name) {
    const bool v = Answer(name) != 0;
    draws_.push_back({0, 1, v ? 1 : 0, true});
    return v;
  }
  const std::vector<Draw>& draws() const { return draws_; }

 private:
  // "rows[3].left_pad" → 3, "left_pad"
  static bool Indexed(std::string_view name, std::string_view prefix, int& index, std::string_view& rest) {
    if (!name.starts_with(prefix)) return false;
    name.remove_prefix(prefix.size());
    const size_t close = name.find(']');
    if (close == std::string_view::npos) return false;
    index = std::stoi(std::string(name.substr(0, close)));
    rest = name.substr(close + 1);
    return true;
  }

  // The kind/value pair of AroundLength (decode_detail) for a size x around t.
  static int64_t AroundKind(int x, int t) {
    if (x == 1) return 0;
    if (x == 2) return 1;
    if (x == std::max(1, t - 1)) return 2;
    if (x == std::max(1, t)) return 3;
    if (x == t + 1) return 4;
    return 5;
  }

  int LongestDocument() const {
    int longest = 0;
    for (const RowSpec& row : t_.rows) {
      if (!row.documents.empty()) longest = std::max(longest, *std::max_element(row.documents.begin(), row.documents.end()));
    }
    return longest;
  }

  int LongestPosition() const {
    int longest = 0;
    for (const RowSpec& row : t_.rows) {
      const int doc = row.documents.empty() ? 0 : *std::max_element(row.documents.begin(), row.documents.end());
      longest = std::max(longest, row.position_offset + std::max(0, doc - 1));
    }
    return longest;
  }

  int64_t Answer(std::string_view name) {
    const RopeSpec& r = t_.encoding.rope;
    const int tk = t_.key_len();
    if (name == "dtype") return IndexOf(caps_.dtypes, t_.dtype);
    if (name == "mask") return IndexOf(caps_.masks, t_.mask);
    if (name == "encoding.kind") {  // the table Decode picks from under the case's mask
      return t_.mask == MaskConvention::kDescriptor ? IndexOf(decode_detail::DescriptorEncodings(caps_), t_.encoding.kind)
                                                    : IndexOf(caps_.encodings, t_.encoding.kind);
    }
    if (name == "layout") return IndexOf(DeclaredLayouts(caps_.descriptor_forms), t_.layout);
    if (name == "page_size") return IndexOf(DeclaredPageSizes(caps_.descriptor_forms), t_.page_size);
    if (name == "q_heads") return t_.q_heads;
    if (name == "q_heads.many") return t_.q_heads > std::clamp(caps_.max_heads, 1, kMaxHeads) ? 0 : 1;
    if (name == "q_heads.many_count") {
      return IndexOf(decode_detail::ManyHeadCounts(caps_.many_heads, std::clamp(caps_.max_heads, 1, kMaxHeads)), t_.q_heads);
    }
    if (name == "kv_heads") {
      int64_t i = 0;
      for (int d = t_.q_heads; d >= 1; --d) {
        if (t_.q_heads % d != 0) continue;
        if (d == t_.kv_heads) return i;
        ++i;
      }
      return 0;
    }
    if (name == "head_dim.odd") return t_.head_dim % 2;
    if (name == "head_dim") {
      return t_.head_dim % 2 != 0 ? IndexOf(kOddHeadDims, t_.head_dim) : IndexOf(kEvenHeadDims, t_.head_dim);
    }
    if (name == "value_dim.differs") return t_.value_dim != t_.head_dim;
    if (name == "value_dim") return t_.value_dim;
    if (name == "key_len.kind") {
      key_kind_ = tk <= kSmallKeyLength ? 0 : (IndexOf(kTileKeyLengths, tk) > 0 ? 1 : 2);
      return key_kind_;
    }
    if (name == "key_len") return key_kind_ == 1 ? IndexOf(kTileKeyLengths, tk) : tk;
    if (name == "query_len.kind") {
      query_kind_ = t_.query_len == tk ? 0 : (t_.query_len <= 3 ? 1 : 2);
      return query_kind_;
    }
    if (name == "query_len") return query_kind_ == 1 ? IndexOf(kDecodeQueryLengths, t_.query_len) : t_.query_len;
    if (name == "visibility") return IndexOf(kAllVisibilityKinds, t_.visibility);
    if (name == "window.kind") return AroundKind(t_.window, tk);
    if (name == "window") return t_.window;
    if (name == "window.two_sided") return t_.window_right > 0 ? 0 : 1;
    if (name == "window.right.kind") return AroundKind(t_.window_right, tk);
    if (name == "window.right") return t_.window_right;
    if (name == "chunk.kind") return AroundKind(t_.chunk, tk);
    if (name == "chunk") return t_.chunk;
    if (name == "batch") return t_.batch();
    int index = 0;
    std::string_view rest;
    if (Indexed(name, "rows[", index, rest)) {
      if (index >= t_.batch()) return 0;
      const RowSpec& row = t_.rows[static_cast<size_t>(index)];
      if (rest == ".padding") return row.left_pad > 0 && row.right_pad > 0 ? 5 : row.left_pad > 0 ? 3 : row.right_pad > 0 ? 4 : 0;
      if (rest == ".left_pad") return row.left_pad;
      if (rest == ".right_pad") return row.right_pad;
      if (rest == ".packed") return row.documents.size() > 1;
      if (rest == ".document_count") return static_cast<int64_t>(row.documents.size());
      if (rest == ".prefix_len") return row.prefix_len;
      if (rest == ".position_offset") return IndexOf(kPositionOffsets, row.position_offset);
      int d = 0;
      std::string_view tail;
      if (Indexed(rest, ".documents[", d, tail) && d < static_cast<int>(row.documents.size())) {
        return row.documents[static_cast<size_t>(d)];
      }
      return 0;
    }
    if (name == "decode_chunks.enabled") return !t_.decode_chunks.empty();
    if (name == "decode_chunks.count") return static_cast<int64_t>(t_.decode_chunks.size());
    if (Indexed(name, "decode_chunks[", index, rest)) {
      if (index >= static_cast<int>(t_.decode_chunks.size())) return 0;
      const int size = t_.decode_chunks[static_cast<size_t>(index)];
      return rest == ".long" ? size > kSmallDecodeChunk : size;
    }
    if (name == "encoding.rope.layout") return IndexOf(caps_.rope_layouts, r.layout);
    if (name == "encoding.rope.base") return IndexOf(kRopeBases, r.base);
    if (name == "encoding.rope.partial") return r.rotary_dim != 0 && r.rotary_dim < t_.head_dim;
    if (name == "encoding.rope.rotary_dim") return r.rotary_dim / 2;
    if (name == "encoding.xpos_scale_base") return IndexOf(kXposScaleBases, t_.encoding.xpos_scale_base);
    if (name == "encoding.rope.scaling") return IndexOf(caps_.rope_scalings, r.scaling);
    if (name == "encoding.rope.log_n") return r.log_n;
    if (name == "encoding.rope.factor") return IndexOf(kRopeFactors, r.factor);
    if (name == "encoding.rope.original_context.kind") {
      const int t = LongestPosition() + 1;
      const int l = r.original_context;
      if (l == 4096) return 0;
      if (l == t) return 2;
      if (l == t + 1) return 3;
      if (l == kFixedOriginalContexts[0]) return 4;
      if (l == kFixedOriginalContexts[1]) return 5;
      // kind 1: inside the second half of the longest document (as Decode draws it)
      if (l >= std::max(1, t - std::max(1, LongestDocument() / 2)) && l <= std::max(1, t - 1)) return 1;
      return 6;
    }
    if (name == "encoding.rope.original_context") return r.original_context;
    if (name == "encoding.rope.ntk_exact_exponent") return r.ntk_exact_exponent;
    if (name == "encoding.rope.beta") {
      for (size_t i = 0; i < std::size(kYarnBetas); ++i) {
        if (kYarnBetas[i].fast == r.beta_fast && kYarnBetas[i].slow == r.beta_slow) return static_cast<int64_t>(i);
      }
      return 0;
    }
    if (name == "encoding.rope.attn_factor") return IndexOf(kYarnAttnFactors, r.attn_factor);
    if (name == "encoding.rope.mixed_b") return IndexOf(kNtkMixedB, r.mixed_b);
    if (name == "encoding.t5_buckets") return IndexOf(kT5Buckets, t_.encoding.t5_buckets);
    if (name == "encoding.t5_max_distance") return IndexOf(kT5MaxDistances, t_.encoding.t5_max_distance);
    if (name == "encoding.t5_bidirectional") return t_.encoding.t5_bidirectional;
    if (name == "encoding.kerple") return IndexOf(kKerpleKinds, t_.encoding.kerple);
    if (name == "encoding.sandwich_scale") return IndexOf(kSandwichScales, t_.encoding.sandwich_scale);
    if (name == "scale") return IndexOf(kScales, t_.scale);
    if (name == "softcap") return IndexOf(kSoftcaps, t_.softcap);
    if (name == "seed") return static_cast<int64_t>(std::min<uint64_t>(t_.seed, static_cast<uint64_t>(kMaxSeed)));
    if (name == "profile") return IndexOf(kAllValueProfiles, t_.profile);
    return 0;
  }

  const Case& t_;
  const Capabilities& caps_;
  std::vector<Draw> draws_;
  int64_t key_kind_ = 0, query_kind_ = 0;
};

template <class Recorder>
std::vector<uint8_t> BytesOf(const Recorder& source) {
  std::vector<uint8_t> bytes;
  for (const Draw& d : source.draws()) {
    if (d.is_bool) {
      AppendFdpBool(bytes, d.value != 0);
    } else {
      AppendFdpInt(bytes, d.lo, d.hi, d.value);
    }
  }
  while (!bytes.empty() && bytes.back() == 0) bytes.pop_back();
  return bytes;
}

}  // namespace seed_detail

struct SeedEncoding {
  std::vector<uint8_t> bytes;  // what FdpSource reads (trailing zero bytes trimmed)
  Case decoded;                // Decode(FdpSource(bytes), caps)
  bool exact = false;          // decoded == target
};

// Bytes whose decode under `caps` is `target`, or the nearest case the search
// reached. `beam` bounds the prefixes kept per draw.
inline SeedEncoding EncodeCase(const Case& target, const Capabilities& caps, int beam = 32) {
  using namespace seed_detail;
  // First the inverse decoder: exact whenever Decode can draw the target.
  SeedEncoding guided;
  {
    GuidedSource source(target, caps);
    guided.decoded = Decode(source, caps);
    guided.bytes = BytesOf(source);
    guided.exact = guided.decoded == target;
    if (guided.exact) return guided;
  }
  const std::map<std::string, std::string> target_fields = Fields(target);
  const nlohmann::json target_json = ToJson(target);
  std::set<int64_t> integers;
  CollectIntegers(target_json, integers);

  struct State {
    std::vector<int64_t> script;
    int score = 0;
    bool done = false;  // the decode makes no draw beyond the script
  };
  auto evaluate = [&](std::vector<int64_t> script) {
    ScriptedSource source(script);
    const Case c = Decode(source, caps);
    State s;
    s.done = source.draws().size() <= script.size();
    s.score = c == target ? 1 << 20 : Similarity(target_fields, c);
    s.script = std::move(script);
    return s;
  };

  std::vector<State> states = {evaluate({})};
  constexpr int kMaxDraws = 4096;
  for (int step = 0; step < kMaxDraws; ++step) {
    if (states.front().score == 1 << 20) break;
    std::vector<State> next;
    bool grew = false;
    for (const State& s : states) {
      if (s.done) {
        next.push_back(s);
        continue;
      }
      ScriptedSource probe(s.script);
      Decode(probe, caps);
      const Draw& d = probe.draws()[s.script.size()];
      for (int64_t v : Candidates(d.lo, d.hi, integers)) {
        std::vector<int64_t> script = s.script;
        script.push_back(v);
        next.push_back(evaluate(std::move(script)));
        grew = true;
      }
    }
    if (!grew) break;
    // Best score first; among equals the shorter script, then the smaller values.
    std::stable_sort(next.begin(), next.end(), [](const State& a, const State& b) {
      if (a.score != b.score) return a.score > b.score;
      return a.script.size() < b.script.size();
    });
    if (next.size() > static_cast<size_t>(beam)) next.resize(static_cast<size_t>(beam));
    states = std::move(next);
  }

  // The searched script's draws as bytes, unless the guided answer is nearer.
  ScriptedSource source(states.front().script);
  SeedEncoding out;
  out.decoded = Decode(source, caps);
  out.bytes = BytesOf(source);
  out.exact = out.decoded == target;
  if (!out.exact && Similarity(target_fields, guided.decoded) >= Similarity(target_fields, out.decoded)) {
    return guided;
  }
  return out;
}

}  // namespace attncheck
