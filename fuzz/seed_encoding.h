// Seed encoding: the inverse of FdpSource + Decode. EncodeCase finds the draws
// that make Decode(FdpSource, caps) give a target case (a corpus seed, a
// regression) and writes them as the bytes FdpSource reads, so each libFuzzer
// target starts from the hand-picked boundary cases of corpora/seeds/.
//
// Decode is only known through its draws, so the draws are searched: a beam
// search over draw prefixes (the rest of the draws at their minimum), each
// draw trying every value of a small range and, for a wide one, the integers the
// target's JSON holds (and their halves: rotary_dim is drawn as a half). A
// partial decode scores by how many JSON fields of the target it already
// matches. A case outside the capabilities cannot be reached exactly: the
// nearest decoded case is kept and `exact` says so.
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

// Target fields matched minus fields the candidate has and the target lacks.
inline int Similarity(const std::map<std::string, std::string>& target, const Case& c) {
  std::map<std::string, std::string> got;
  Flatten(ToJson(c), "", got);
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

}  // namespace seed_detail

struct SeedEncoding {
  std::vector<uint8_t> bytes;  // what FdpSource reads (trailing zero bytes trimmed)
  Case decoded;                // Decode(FdpSource(bytes), caps)
  bool exact = false;          // decoded == target
};

// Bytes whose decode under `caps` is `target`, or the nearest case the search
// reached. `beam` bounds the prefixes kept per draw.
inline SeedEncoding EncodeCase(const Case& target, const Capabilities& caps, int beam = 12) {
  using namespace seed_detail;
  std::map<std::string, std::string> target_fields;
  const nlohmann::json target_json = ToJson(target);
  Flatten(target_json, "", target_fields);
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

  // Write the best script's draws as bytes.
  ScriptedSource source(states.front().script);
  SeedEncoding out;
  out.decoded = Decode(source, caps);
  for (const Draw& d : source.draws()) {
    if (d.is_bool) {
      AppendFdpBool(out.bytes, d.value != 0);
    } else {
      AppendFdpInt(out.bytes, d.lo, d.hi, d.value);
    }
  }
  while (!out.bytes.empty() && out.bytes.back() == 0) out.bytes.pop_back();
  out.exact = out.decoded == target;
  return out;
}

}  // namespace attncheck
