// JSON form of a Case (DESIGN §3: the durable format of corpora and reports).
// Writing is full (every field, so a file is self-describing); reading is strict:
// unknown keys and wrong types throw InputError naming the field, a missing key
// takes its default (short hand-written seeds), except "rows", which is required.
#include "cases/case_json.h"

#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include "cases/error.h"

namespace attncheck {
namespace {

using nlohmann::json;

json RopeToJson(const RopeSpec& r) {
  json j;
  j["layout"] = Name(r.layout);
  j["base"] = r.base;
  j["rotary_dim"] = r.rotary_dim;
  j["scaling"] = Name(r.scaling);
  j["factor"] = r.factor;
  j["original_context"] = r.original_context;
  j["ntk_exact_exponent"] = r.ntk_exact_exponent;
  j["beta_fast"] = r.beta_fast;
  j["beta_slow"] = r.beta_slow;
  j["attn_factor"] = r.attn_factor;
  j["low_freq_factor"] = r.low_freq_factor;
  j["high_freq_factor"] = r.high_freq_factor;
  j["mixed_b"] = r.mixed_b;
  j["log_n"] = r.log_n;
  return j;
}

json EncodingToJson(const EncodingSpec& e) {
  json j;
  j["kind"] = Name(e.kind);
  j["rope"] = RopeToJson(e.rope);
  j["t5_buckets"] = e.t5_buckets;
  j["t5_max_distance"] = e.t5_max_distance;
  j["t5_bidirectional"] = e.t5_bidirectional;
  j["kerple"] = Name(e.kerple);
  j["xpos_scale_base"] = e.xpos_scale_base;
  j["sandwich_scale"] = e.sandwich_scale;
  return j;
}

json RowToJson(const RowSpec& row) {
  json j;
  j["left_pad"] = row.left_pad;
  j["right_pad"] = row.right_pad;
  j["documents"] = row.documents;
  j["prefix_len"] = row.prefix_len;
  j["position_offset"] = row.position_offset;
  return j;
}

std::string Join(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : path + "." + std::string(key);
}

// "string \"3\"", "number 1.5", "array" — what a wrong value was, briefly.
std::string Describe(const json& value) {
  std::string text;
  if (value.is_primitive()) {
    text = value.dump();
    if (text.size() > 40) text = text.substr(0, 37) + "...";
    return fmt::format("{} {}", value.type_name(), text);
  }
  return value.type_name();
}

template <class E, size_t N>
std::string Choices(const std::array<E, N>& all) {
  std::string s;
  for (E value : all) {
    if (!s.empty()) s += "|";
    s += Name(value);
  }
  return s;
}

// Strict reader: every helper takes the object and the key, leaves the output
// at its default when the key is absent, and throws InputError otherwise.
class Reader {
 public:
  explicit Reader(const std::string& file) : file_(file) {}

  [[noreturn]] void Fail(const std::string& field, const std::string& reason) const {
    throw InputError(file_, field, reason);
  }

  void Object(const json& j, const std::string& path, std::initializer_list<std::string_view> keys) const {
    if (!j.is_object()) Fail(path, "expected an object, got " + Describe(j));
    const std::set<std::string_view> known(keys);
    for (const auto& [key, value] : j.items()) {
      if (!known.contains(key)) {
        std::string expected;
        for (std::string_view k : keys) expected += (expected.empty() ? "" : ", ") + std::string(k);
        Fail(Join(path, key), "unknown key (known keys: " + expected + ")");
      }
    }
  }

  int IntValue(const json& v, const std::string& field) const {
    if (!v.is_number_integer()) Fail(field, "expected an integer, got " + Describe(v));
    if (v.is_number_unsigned()) {
      const uint64_t u = v.get<uint64_t>();
      if (u > static_cast<uint64_t>(std::numeric_limits<int>::max())) Fail(field, "integer out of range: " + v.dump());
      return static_cast<int>(u);
    }
    const int64_t s = v.get<int64_t>();
    if (s < std::numeric_limits<int>::min() || s > std::numeric_limits<int>::max()) {
      Fail(field, "integer out of range: " + v.dump());
    }
    return static_cast<int>(s);
  }

  void Int(const json& obj, std::string_view key, const std::string& path, int& out) const {
    if (auto it = obj.find(key); it != obj.end()) out = IntValue(*it, Join(path, key));
  }

  void IntList(const json& obj, std::string_view key, const std::string& path, std::vector<int>& out) const {
    auto it = obj.find(key);
    if (it == obj.end()) return;
    const std::string field = Join(path, key);
    if (!it->is_array()) Fail(field, "expected an array of integers, got " + Describe(*it));
    out.clear();
    for (size_t i = 0; i < it->size(); ++i) out.push_back(IntValue((*it)[i], fmt::format("{}[{}]", field, i)));
  }

  void Double(const json& obj, std::string_view key, const std::string& path, double& out) const {
    auto it = obj.find(key);
    if (it == obj.end()) return;
    if (!it->is_number()) Fail(Join(path, key), "expected a number, got " + Describe(*it));
    out = it->get<double>();
  }

  void Bool(const json& obj, std::string_view key, const std::string& path, bool& out) const {
    auto it = obj.find(key);
    if (it == obj.end()) return;
    if (!it->is_boolean()) Fail(Join(path, key), "expected true or false, got " + Describe(*it));
    out = it->get<bool>();
  }

  void Uint64(const json& obj, std::string_view key, const std::string& path, uint64_t& out) const {
    auto it = obj.find(key);
    if (it == obj.end()) return;
    if (!it->is_number_unsigned()) {
      Fail(Join(path, key), "expected a non-negative integer, got " + Describe(*it));
    }
    out = it->get<uint64_t>();
  }

  template <class E, size_t N>
  void Enum(const json& obj, std::string_view key, const std::string& path, const std::array<E, N>& all,
            std::optional<E> (*parse)(std::string_view), E& out) const {
    auto it = obj.find(key);
    if (it == obj.end()) return;
    const std::string expected = "expected one of " + Choices(all);
    if (!it->is_string()) Fail(Join(path, key), expected + ", got " + Describe(*it));
    const std::string& text = it->get_ref<const std::string&>();
    const std::optional<E> value = parse(text);
    if (!value) Fail(Join(path, key), fmt::format("{}, got {}", expected, json(text).dump()));
    out = *value;
  }

 private:
  const std::string& file_;
};

RopeSpec RopeFromJson(const Reader& in, const json& j, const std::string& path) {
  in.Object(j, path,
            {"layout", "base", "rotary_dim", "scaling", "factor", "original_context", "ntk_exact_exponent",
             "beta_fast", "beta_slow", "attn_factor", "low_freq_factor", "high_freq_factor", "mixed_b", "log_n"});
  RopeSpec r;
  in.Enum(j, "layout", path, kAllRopeLayouts, &ParseRopeLayout, r.layout);
  in.Double(j, "base", path, r.base);
  in.Int(j, "rotary_dim", path, r.rotary_dim);
  in.Enum(j, "scaling", path, kAllRopeScalings, &ParseRopeScaling, r.scaling);
  in.Double(j, "factor", path, r.factor);
  in.Int(j, "original_context", path, r.original_context);
  in.Bool(j, "ntk_exact_exponent", path, r.ntk_exact_exponent);
  in.Double(j, "beta_fast", path, r.beta_fast);
  in.Double(j, "beta_slow", path, r.beta_slow);
  in.Double(j, "attn_factor", path, r.attn_factor);
  in.Double(j, "low_freq_factor", path, r.low_freq_factor);
  in.Double(j, "high_freq_factor", path, r.high_freq_factor);
  in.Double(j, "mixed_b", path, r.mixed_b);
  in.Bool(j, "log_n", path, r.log_n);
  return r;
}

EncodingSpec EncodingFromJson(const Reader& in, const json& j, const std::string& path) {
  in.Object(j, path,
            {"kind", "rope", "t5_buckets", "t5_max_distance", "t5_bidirectional", "kerple", "xpos_scale_base",
             "sandwich_scale"});
  EncodingSpec e;
  in.Enum(j, "kind", path, kAllEncodingKinds, &ParseEncodingKind, e.kind);
  if (auto it = j.find("rope"); it != j.end()) e.rope = RopeFromJson(in, *it, Join(path, "rope"));
  in.Int(j, "t5_buckets", path, e.t5_buckets);
  in.Int(j, "t5_max_distance", path, e.t5_max_distance);
  in.Bool(j, "t5_bidirectional", path, e.t5_bidirectional);
  in.Enum(j, "kerple", path, kAllKerpleKinds, &ParseKerpleKind, e.kerple);
  in.Double(j, "xpos_scale_base", path, e.xpos_scale_base);
  in.Double(j, "sandwich_scale", path, e.sandwich_scale);
  return e;
}

RowSpec RowFromJson(const Reader& in, const json& j, const std::string& path) {
  in.Object(j, path, {"left_pad", "right_pad", "documents", "prefix_len", "position_offset"});
  RowSpec row;
  in.Int(j, "left_pad", path, row.left_pad);
  in.Int(j, "right_pad", path, row.right_pad);
  in.IntList(j, "documents", path, row.documents);
  in.Int(j, "prefix_len", path, row.prefix_len);
  in.Int(j, "position_offset", path, row.position_offset);
  return row;
}

std::string ErrnoText() { return std::strerror(errno); }

}  // namespace

json ToJson(const Case& c) {
  json j;
  j["q_heads"] = c.q_heads;
  j["kv_heads"] = c.kv_heads;
  j["head_dim"] = c.head_dim;
  j["value_dim"] = c.value_dim;
  j["query_len"] = c.query_len;
  j["rows"] = json::array();
  for (const RowSpec& row : c.rows) j["rows"].push_back(RowToJson(row));
  j["visibility"] = Name(c.visibility);
  j["window"] = c.window;
  if (c.window_right != 0) j["window_right"] = c.window_right;  // absent: every earlier case's hash stays
  j["chunk"] = c.chunk;
  j["decode_chunks"] = c.decode_chunks;
  j["encoding"] = EncodingToJson(c.encoding);
  j["dtype"] = Name(c.dtype);
  j["mask"] = Name(c.mask);
  j["scale"] = c.scale;
  j["softcap"] = c.softcap;
  if (c.layout != DescriptorLayout::kAuto) j["layout"] = Name(c.layout);  // absent: earlier hashes stay
  if (c.page_size != 0) j["page_size"] = c.page_size;
  j["seed"] = c.seed;
  j["profile"] = Name(c.profile);
  return j;
}

Case FromJson(const json& j, const std::string& file) {
  const Reader in(file);
  const std::string top;
  in.Object(j, top,
            {"q_heads", "kv_heads", "head_dim", "value_dim", "query_len", "rows", "visibility", "window", "window_right", "chunk",
             "decode_chunks", "encoding", "dtype", "mask", "scale", "softcap", "layout", "page_size", "seed", "profile"});
  Case c;
  in.Int(j, "q_heads", top, c.q_heads);
  in.Int(j, "kv_heads", top, c.kv_heads);
  in.Int(j, "head_dim", top, c.head_dim);
  in.Int(j, "value_dim", top, c.value_dim);
  in.Int(j, "query_len", top, c.query_len);
  auto rows = j.find("rows");
  if (rows == j.end()) in.Fail("rows", "required (an array of rows, each {\"documents\": [lengths]})");
  if (!rows->is_array()) in.Fail("rows", "expected an array, got " + Describe(*rows));
  for (size_t b = 0; b < rows->size(); ++b) c.rows.push_back(RowFromJson(in, (*rows)[b], fmt::format("rows[{}]", b)));
  in.Enum(j, "visibility", top, kAllVisibilityKinds, &ParseVisibilityKind, c.visibility);
  in.Int(j, "window", top, c.window);
  in.Int(j, "window_right", top, c.window_right);
  in.Int(j, "chunk", top, c.chunk);
  in.IntList(j, "decode_chunks", top, c.decode_chunks);
  if (auto it = j.find("encoding"); it != j.end()) c.encoding = EncodingFromJson(in, *it, "encoding");
  in.Enum(j, "dtype", top, kAllDtypes, &ParseDtype, c.dtype);
  in.Enum(j, "mask", top, kAllMaskConventions, &ParseMaskConvention, c.mask);
  in.Double(j, "scale", top, c.scale);
  in.Double(j, "softcap", top, c.softcap);
  in.Enum(j, "layout", top, kAllDescriptorLayouts, &ParseDescriptorLayout, c.layout);
  in.Int(j, "page_size", top, c.page_size);
  in.Uint64(j, "seed", top, c.seed);
  in.Enum(j, "profile", top, kAllValueProfiles, &ParseValueProfile, c.profile);

  if (const std::optional<std::string> problem = Validate(c)) {
    const size_t colon = problem->find(": ");
    if (colon == std::string::npos) in.Fail("", *problem);
    in.Fail(problem->substr(0, colon), problem->substr(colon + 2));
  }
  return c;
}

json ToJson(const EncodingSpec& e) { return EncodingToJson(e); }

EncodingSpec EncodingSpecFromJson(const json& j, const std::string& file) {
  return EncodingFromJson(Reader(file), j, "encoding");
}

Case ReadCaseFile(const std::string& path) {
  std::ifstream stream(path, std::ios::binary);
  if (!stream) throw InputError(path, "", "cannot open: " + ErrnoText());
  std::ostringstream text;
  text << stream.rdbuf();
  if (stream.bad()) throw InputError(path, "", "cannot read: " + ErrnoText());
  return ParseCaseText(text.str(), path);
}

Case ParseCaseText(std::string_view text, const std::string& file) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    // parse_error, and out_of_range for a number too large for a double
    // ("1e400"). Drop nlohmann's "[json.exception.parse_error.101] " prefix.
    std::string reason = e.what();
    if (const size_t close = reason.find("] "); reason.starts_with("[json.exception") && close != std::string::npos) {
      reason = reason.substr(close + 2);
    }
    throw InputError(file, "", "not valid JSON: " + reason);
  }
  return FromJson(j, file);
}

void WriteCaseFile(const std::string& path, const Case& c) { WriteFileAtomic(path, ToJson(c).dump(2) + "\n"); }

void WriteFileAtomic(const std::string& path, const std::string& text) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  std::error_code error;
  if (target.has_parent_path()) {
    fs::create_directories(target.parent_path(), error);
    if (error) throw InputError(path, "", "cannot create folder: " + error.message());
  }
  static std::atomic<unsigned long> serial{0};  // threads of one process write distinct temp files
  const std::string temp = fmt::format("{}.tmp.{}.{}", path, static_cast<long>(::getpid()), serial++);
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    if (!out) throw InputError(path, "", "cannot write " + temp + ": " + ErrnoText());
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    out.flush();
    if (!out) {
      const std::string reason = ErrnoText();
      fs::remove(temp, error);
      throw InputError(path, "", "cannot write " + temp + ": " + reason);
    }
  }
  fs::rename(temp, target, error);
  if (error) {
    const std::string reason = error.message();
    std::error_code ignored;
    fs::remove(temp, ignored);
    throw InputError(path, "", "cannot rename temporary file into place: " + reason);
  }
}

}  // namespace attncheck
