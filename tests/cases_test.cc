// Tests of the vocabulary (cases/): enum names, Validate, the JSON form (round
// trip, strict reading), the stable hash, the one-line form, the sources and the
// one Decode (validity, determinism, capabilities, boundary coverage).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "cases/capabilities.h"
#include "cases/case.h"
#include "cases/case_json.h"
#include "cases/decode.h"
#include "cases/error.h"
#include "cases/random_source.h"
#include "cases/rc_source.h"

namespace attncheck {
namespace {

// Every dtype, convention, encoding, layout and scaling, GQA, softcap.
Capabilities Everything() {
  Capabilities caps;
  caps.dtypes.assign(kAllDtypes.begin(), kAllDtypes.end());
  caps.masks.assign(kAllMaskConventions.begin(), kAllMaskConventions.end());
  caps.encodings.assign(kAllEncodingKinds.begin(), kAllEncodingKinds.end());
  caps.rope_layouts.assign(kAllRopeLayouts.begin(), kAllRopeLayouts.end());
  caps.rope_scalings.assign(kAllRopeScalings.begin(), kAllRopeScalings.end());
  caps.gqa = true;
  caps.softcap = true;
  caps.value_dim_differs = true;
  caps.max_tokens = 130;
  caps.max_head_dim = 64;
  return caps;
}

// A source out of bytes: every draw is its minimum (FdpSource when exhausted).
struct MinSource {
  int64_t Int(int64_t lo, int64_t /*hi*/, std::string_view /*name*/) { return lo; }
  bool Bool(std::string_view /*name*/) { return false; }
};
static_assert(Source<MinSource>);

// A source at every maximum.
struct MaxSource {
  int64_t Int(int64_t lo, int64_t hi, std::string_view /*name*/) { return std::max(lo, hi); }
  bool Bool(std::string_view /*name*/) { return true; }
};

int LargestPosition(const Case& c) {
  int largest = 0;
  for (const RowSpec& row : c.rows) {
    for (int length : row.documents) largest = std::max(largest, row.position_offset + length - 1);
  }
  return largest;
}

std::string ValidateText(const Case& c) { return Validate(c).value_or("ok"); }

// The case of the header's ToLine example.
Case ExampleCase() {
  Case c;
  c.q_heads = 4;
  c.kv_heads = 2;
  c.head_dim = 16;
  c.value_dim = 16;
  c.query_len = 5;
  c.rows = {RowSpec{.left_pad = 2, .documents = {3, 4}}, RowSpec{.documents = {9}}};
  c.encoding.kind = EncodingKind::kRope;
  c.encoding.rope.rotary_dim = 16;
  c.dtype = Dtype::kF16;
  c.seed = 7;
  return c;
}

void ExpectRoundTrip(const Case& c) {
  ASSERT_EQ(ValidateText(c), "ok") << ToLine(c);
  const nlohmann::json j = ToJson(c);
  const Case back = FromJson(j);
  EXPECT_EQ(back, c) << ToLine(c) << "\n" << ToLine(back);
  EXPECT_EQ(Hash(back), Hash(c));
  // Through text too, as a file holds it.
  const Case from_text = FromJson(nlohmann::json::parse(j.dump(2)));
  EXPECT_EQ(from_text, c) << j.dump();
  EXPECT_EQ(ToJson(from_text).dump(), j.dump());
}

// ---- names ----

template <class E, size_t N>
void ExpectNamesRoundTrip(const std::array<E, N>& all, std::optional<E> (*parse)(std::string_view)) {
  std::set<std::string_view> seen;
  for (E value : all) {
    const std::string_view name = Name(value);
    EXPECT_NE(name, "?");
    EXPECT_TRUE(seen.insert(name).second) << "duplicate name " << name;
    EXPECT_EQ(parse(name), value) << name;
    for (char ch : name) EXPECT_FALSE(ch >= 'A' && ch <= 'Z') << name;
  }
  EXPECT_EQ(parse("no-such-name"), std::nullopt);
  EXPECT_EQ(parse(""), std::nullopt);
}

TEST(CaseNames, EveryEnumRoundTripsThroughItsName) {
  ExpectNamesRoundTrip(kAllDtypes, &ParseDtype);
  ExpectNamesRoundTrip(kAllVisibilityKinds, &ParseVisibilityKind);
  ExpectNamesRoundTrip(kAllMaskConventions, &ParseMaskConvention);
  ExpectNamesRoundTrip(kAllEncodingKinds, &ParseEncodingKind);
  ExpectNamesRoundTrip(kAllRopeLayouts, &ParseRopeLayout);
  ExpectNamesRoundTrip(kAllRopeScalings, &ParseRopeScaling);
  ExpectNamesRoundTrip(kAllKerpleKinds, &ParseKerpleKind);
  ExpectNamesRoundTrip(kAllValueProfiles, &ParseValueProfile);
}

TEST(CaseNames, StableSpellings) {
  EXPECT_EQ(Name(VisibilityKind::kPrefixLm), "prefix-lm");
  EXPECT_EQ(Name(VisibilityKind::kSlidingWindow), "sliding-window");
  EXPECT_EQ(Name(MaskConvention::kAdditiveNegInf), "add-inf");
  EXPECT_EQ(Name(MaskConvention::kAdditiveMinus1e9), "add-1e9");
  EXPECT_EQ(Name(MaskConvention::kCausalBottomRight), "causal-bottom-right");
  EXPECT_EQ(Name(RopeLayout::kHalfSplit), "half-split");
  EXPECT_EQ(Name(RopeScaling::kDynamicNtk), "dynamic-ntk");
  EXPECT_EQ(Name(RopeScaling::kNtkMixed), "ntk-mixed");
  EXPECT_EQ(Name(ValueProfile::kNearCancellation), "near-cancellation");
  EXPECT_EQ(Name(ValueProfile::kExtremeLogits), "extreme-logits");
  EXPECT_EQ(Name(Dtype::kBf16), "bf16");
  EXPECT_EQ(Name(MaskedRowPolicy::kZeros), "zeros");
  EXPECT_EQ(Name(MaskedRowPolicy::kNaN), "nan");
  EXPECT_EQ(Name(MaskedRowPolicy::kUnspecified), "unspecified");
}

TEST(CaseNames, MaskConventionClasses) {
  int additive = 0, boolean = 0, flag = 0;
  for (MaskConvention m : kAllMaskConventions) {
    EXPECT_EQ(IsAdditive(m) + IsBool(m) + IsCausalFlag(m) + (m == MaskConvention::kDescriptor), 1) << Name(m);
    additive += IsAdditive(m);
    boolean += IsBool(m);
    flag += IsCausalFlag(m);
  }
  EXPECT_EQ(additive, 4);
  EXPECT_EQ(boolean, 2);
  EXPECT_EQ(flag, 2);
}

// ---- the value ----

TEST(CaseValue, DerivedQuantities) {
  const Case c = ExampleCase();
  EXPECT_EQ(c.batch(), 2);
  EXPECT_EQ(c.key_len(), 9);
  EXPECT_EQ(c.rows[0].real_tokens(), 7);
  EXPECT_EQ(c.rows[0].slots(), 9);
  EXPECT_DOUBLE_EQ(c.effective_scale(), 0.25);
  Case scaled = c;
  scaled.scale = 0.5;
  EXPECT_DOUBLE_EQ(scaled.effective_scale(), 0.5);
}

TEST(CaseValue, ValidateNamesTheFirstProblem) {
  Case c = ExampleCase();
  EXPECT_EQ(ValidateText(c), "ok");
  struct Mutation {
    const char* field;
    void (*apply)(Case&);
  };
  const Mutation mutations[] = {
      {"rows:", [](Case& x) { x.rows.clear(); }},
      {"rows[1]:", [](Case& x) { x.rows[1].documents = {8}; }},
      {"rows[0].left_pad:", [](Case& x) { x.rows[0].left_pad = -1; }},
      {"rows[1].documents:", [](Case& x) { x.rows[1].documents.clear(); }},
      {"rows[0].documents[1]:", [](Case& x) { x.rows[0].documents[1] = -4; }},
      {"rows[0].position_offset:", [](Case& x) { x.rows[0].position_offset = -1; }},
      {"kv_heads:", [](Case& x) { x.kv_heads = 3; }},
      {"head_dim:", [](Case& x) { x.head_dim = 1; }},
      {"value_dim:", [](Case& x) { x.value_dim = 0; }},
      {"query_len:", [](Case& x) { x.query_len = x.key_len() + kMaxLeadingQueries + 1; }},
      {"rows[0].left_pad:", [](Case& x) { x.query_len = x.key_len() + 1; }},  // leading queries need no left pad
      {"query_len:", [](Case& x) { x.query_len = 0; }},
      {"window:", [](Case& x) { x.visibility = VisibilityKind::kSlidingWindow; }},
      {"chunk:", [](Case& x) { x.visibility = VisibilityKind::kChunked; }},
      {"decode_chunks[0]:", [](Case& x) { x.decode_chunks = {0}; }},
      {"decode_chunks:", [](Case& x) { x.decode_chunks = {5, 5}; }},
      {"encoding.rope.rotary_dim:", [](Case& x) { x.encoding.rope.rotary_dim = 7; }},
      {"encoding.rope.rotary_dim:", [](Case& x) { x.encoding.rope.rotary_dim = 18; }},
      {"head_dim:", [](Case& x) { x.head_dim = 15, x.value_dim = 15, x.encoding.rope.rotary_dim = 0; }},
      {"encoding.rope.factor:", [](Case& x) {
         x.encoding.rope.scaling = RopeScaling::kLinear;
         x.encoding.rope.factor = 0.5;
       }},
      {"softcap:", [](Case& x) { x.softcap = -1; }},
      {"scale:", [](Case& x) { x.scale = -0.5; }},
      {"mask:", [](Case& x) {
         x.mask = MaskConvention::kCausalBottomRight;
         x.visibility = VisibilityKind::kBidirectional;
       }},
      {"rows[0]:", [](Case& x) { x.mask = MaskConvention::kCausalBottomRight; }},
  };
  for (const Mutation& m : mutations) {
    Case bad = c;
    m.apply(bad);
    const std::string problem = ValidateText(bad);
    EXPECT_TRUE(problem.starts_with(m.field)) << "want " << m.field << ", got " << problem;
  }
}

TEST(CaseValue, CausalFlagCasesThatTheFlagExpresses) {
  Case c;
  c.rows = {RowSpec{.documents = {6}}, RowSpec{.documents = {6}}};
  c.query_len = 6;
  c.mask = MaskConvention::kCausalTopLeft;
  EXPECT_EQ(ValidateText(c), "ok");
  c.query_len = 2;
  EXPECT_TRUE(ValidateText(c).starts_with("query_len:"));
  c.mask = MaskConvention::kCausalBottomRight;
  c.decode_chunks = {1, 1};
  EXPECT_EQ(ValidateText(c), "ok");
}

// ---- hash and line ----

TEST(CaseHash, StableAcrossMachines) {
  // Golden values: the hash is FNV-1a 64 of ToJson(c).dump(); a change here
  // renames every corpus file, so it must be deliberate.
  Case plain;
  plain.rows = {RowSpec{.documents = {3}}};
  plain.query_len = 3;
  EXPECT_EQ(ToJson(plain).dump(),
            R"({"chunk":0,"decode_chunks":[],"dtype":"f32","encoding":{"kerple":"log","kind":"none","rope":)"
            R"({"attn_factor":0.0,"base":10000.0,"beta_fast":32.0,"beta_slow":1.0,"factor":1.0,)"
            R"("high_freq_factor":4.0,"layout":"half-split","log_n":false,"low_freq_factor":1.0,"mixed_b":0.5,)"
            R"("ntk_exact_exponent":true,"original_context":4096,"rotary_dim":0,"scaling":"none"},)"
            R"("sandwich_scale":1.0,"t5_bidirectional":false,"t5_buckets":32,"t5_max_distance":128,)"
            R"("xpos_scale_base":512.0},"head_dim":8,"kv_heads":1,"mask":"add-inf","profile":"normal",)"
            R"("q_heads":1,"query_len":3,"rows":[{"documents":[3],"left_pad":0,"position_offset":0,)"
            R"("prefix_len":0,"right_pad":0}],"scale":0.0,"seed":0,"softcap":0.0,"value_dim":8,)"
            R"("visibility":"causal","window":0})");
  EXPECT_EQ(fmt::format("{:016x}", Hash(plain)), "a23d9298ec847918");
  EXPECT_EQ(fmt::format("{:016x}", Hash(ExampleCase())), "fd17dcbbcae562e3");
  EXPECT_EQ(Hash8(ExampleCase()), "fd17dcbb");
  Case other = ExampleCase();
  other.seed = 8;
  EXPECT_NE(Hash(other), Hash(ExampleCase()));
}

TEST(CaseLine, ExampleLine) {
  EXPECT_EQ(ToLine(ExampleCase()),
            "Case(B=2,Hq=4,Hkv=2,D=16,Dv=16,Tq=5,Tk=9,vis=causal,rows=[{lp=2,docs=[3,4]},{docs=[9]}],"
            "enc=rope(half-split,base=10000,rd=16),f16,mask=add-inf,seed=7,profile=normal)");
  EXPECT_EQ(fmt::format("{}", ExampleCase()), ToLine(ExampleCase()));
}

TEST(CaseLine, OneLineAndDistinctForDistinctCases) {
  const Capabilities caps = Everything();
  std::map<std::string, Case> by_line;
  for (int i = 0; i < 1500; ++i) {
    RandomSource src(11, i);
    const Case c = Decode(src, caps);
    const std::string line = ToLine(c);
    ASSERT_EQ(line.find('\n'), std::string::npos) << line;
    ASSERT_TRUE(line.starts_with("Case(") && line.ends_with(")")) << line;
    EXPECT_EQ(fmt::format("{}", c), line);
    auto [it, inserted] = by_line.emplace(line, c);
    if (!inserted) {
      EXPECT_EQ(it->second, c) << "two cases print as " << line;
    }
  }
  EXPECT_GT(by_line.size(), 1400u);
  // Fields irrelevant to the encoding still show when set.
  Case a = ExampleCase();
  Case b = a;
  b.encoding.t5_buckets = 8;
  EXPECT_NE(ToLine(a), ToLine(b));
  b = a;
  b.encoding.rope.rotary_dim = 0;
  EXPECT_NE(ToLine(a), ToLine(b));
}

// ---- JSON ----

RC_GTEST_PROP(CaseJson, RoundTripDefaultCapabilities, ()) {
  RcSource src;
  const Case c = Decode(src, Capabilities{});
  RC_ASSERT(ValidateText(c) == std::string("ok"));
  const Case back = FromJson(ToJson(c));
  RC_ASSERT(back == c);
  RC_ASSERT(Hash(back) == Hash(c));
  RC_ASSERT(FromJson(nlohmann::json::parse(ToJson(c).dump())) == c);
}

RC_GTEST_PROP(CaseJson, RoundTripEverythingEnabled, ()) {
  RcSource src;
  const Case c = Decode(src, Everything());
  RC_TAG(std::string(Name(c.encoding.kind)));
  RC_ASSERT(ValidateText(c) == std::string("ok"));
  const Case back = FromJson(ToJson(c));
  RC_ASSERT(back == c);
  RC_ASSERT(Hash(back) == Hash(c));
  RC_ASSERT(FromJson(nlohmann::json::parse(ToJson(c).dump())) == c);
}

TEST(CaseJson, RoundTripManyRandomCases) {
  const Capabilities caps = Everything();
  for (int i = 0; i < 500; ++i) {
    RandomSource src(3, i);
    ExpectRoundTrip(Decode(src, caps));
  }
  ExpectRoundTrip(ExampleCase());
}

TEST(CaseJson, WritesEveryField) {
  const nlohmann::json j = ToJson(ExampleCase());
  for (const char* key : {"q_heads", "kv_heads", "head_dim", "value_dim", "query_len", "rows", "visibility",
                          "window", "chunk", "decode_chunks", "encoding", "dtype", "mask", "scale", "softcap",
                          "seed", "profile"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["rows"][0].size(), 5u);
  EXPECT_EQ(j["encoding"].size(), 8u);
  EXPECT_EQ(j["encoding"]["rope"].size(), 14u);
  EXPECT_EQ(j["encoding"]["rope"]["layout"], "half-split");
  EXPECT_EQ(j["mask"], "add-inf");
  EXPECT_TRUE(j["seed"].is_number_unsigned());
}

TEST(CaseJson, ShortSeedFileTakesDefaults) {
  const Case c = FromJson(nlohmann::json::parse(R"({"rows": [{"documents": [4]}], "query_len": 4})"));
  Case want;
  want.rows = {RowSpec{.documents = {4}}};
  want.query_len = 4;
  EXPECT_EQ(c, want);
  const Case big_seed = FromJson(nlohmann::json::parse(R"({"rows": [{"documents": [1]}], "seed": 18446744073709551615})"));
  EXPECT_EQ(big_seed.seed, UINT64_MAX);
}

class TempDir {
 public:
  TempDir() {
    path_ = std::filesystem::temp_directory_path() / fmt::format("attncheck-cases-test-{}", ::getpid());
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string File(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

TEST(CaseJson, FileRoundTripIsAtomic) {
  TempDir dir;
  const std::string path = dir.File("nested/folder/case.json");
  WriteCaseFile(path, ExampleCase());
  EXPECT_EQ(ReadCaseFile(path), ExampleCase());
  Case small;
  small.rows = {RowSpec{.documents = {2}}};
  WriteCaseFile(path, small);  // overwrite in place
  EXPECT_EQ(ReadCaseFile(path).key_len(), 2);
  int files = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir.path())) {
    if (entry.is_regular_file()) {
      ++files;
      EXPECT_EQ(entry.path().filename(), "case.json") << "temporary left behind: " << entry.path();
    }
  }
  EXPECT_EQ(files, 1);
  EXPECT_THROW(ReadCaseFile(dir.File("missing.json")), InputError);
}

struct Malformed {
  const char* what;
  const char* text;
  const char* field;   // InputError::field()
  const char* reason;  // a piece of InputError::reason()
};

const Malformed kMalformed[] = {
    {"wrong enum", R"({"rows": [{"documents": [4]}], "dtype": "f64"})", "dtype",
     R"(expected one of f32|f16|bf16, got "f64")"},
    {"wrong nested enum", R"({"rows": [{"documents": [4]}], "encoding": {"kind": "rope", "rope": {"layout": "foo"}}})",
     "encoding.rope.layout", R"(expected one of interleaved|half-split, got "foo")"},
    {"enum of wrong type", R"({"rows": [{"documents": [4]}], "visibility": 3})", "visibility", "expected one of"},
    {"negative pad", R"({"rows": [{"left_pad": -2, "documents": [4]}]})", "rows[0].left_pad", "must be >= 0"},
    {"negative document", R"({"rows": [{"documents": [4]}, {"documents": [-1, 5]}]})", "rows[1].documents[0]",
     "must be >= 0"},
    {"rows missing", R"({"q_heads": 2, "kv_heads": 1})", "rows", "required"},
    {"rows not an array", R"({"rows": {"documents": [4]}})", "rows", "expected an array"},
    {"no rows", R"({"rows": []})", "rows", "at least one row"},
    {"unknown key", R"({"rows": [{"documents": [4]}], "heads": 2})", "heads", "unknown key"},
    {"unknown nested key", R"({"rows": [{"docs": [4]}]})", "rows[0].docs", "unknown key"},
    {"type error", R"({"rows": [{"documents": [4]}], "head_dim": "8"})", "head_dim", R"(expected an integer, got string "8")"},
    {"float for int", R"({"rows": [{"documents": [4]}], "head_dim": 8.5})", "head_dim", "expected an integer"},
    {"bool type error", R"({"rows": [{"documents": [4]}], "encoding": {"t5_bidirectional": 1}})",
     "encoding.t5_bidirectional", "expected true or false"},
    {"int out of range", R"({"rows": [{"documents": [4]}], "window": 99999999999})", "window", "out of range"},
    {"negative seed", R"({"rows": [{"documents": [4]}], "seed": -1})", "seed", "non-negative integer"},
    {"invalid JSON", R"({"rows": [{"documents": [4]})", "", "not valid JSON"},
    {"not an object", R"([1, 2])", "", "expected an object"},
    {"Tq > Tk, no position for the leading query", R"({"rows": [{"documents": [4]}], "query_len": 5})",
     "rows[0].position_offset", "must be >= query_len - key length = 1"},
    {"Tq far beyond Tk", R"({"rows": [{"documents": [4]}], "query_len": 99999})", "query_len",
     "must be in [1, key length + 4096 = 4100]"},
    {"rows of different lengths", R"({"rows": [{"documents": [4]}, {"documents": [2], "left_pad": 1}]})", "rows[1]",
     "has 3 key slots but rows[0] has 4"},
    {"kv_heads not dividing", R"({"rows": [{"documents": [4]}], "q_heads": 6, "kv_heads": 4})", "kv_heads",
     "must divide"},
    {"odd rotary dim", R"({"rows": [{"documents": [4]}], "encoding": {"kind": "rope", "rope": {"rotary_dim": 3}}})",
     "encoding.rope.rotary_dim", "even"},
    {"decode chunks too long", R"({"rows": [{"documents": [4]}], "decode_chunks": [2, 3]})", "decode_chunks",
     "exceeds key length"},
    {"window missing", R"({"rows": [{"documents": [4]}], "visibility": "sliding-window"})", "window", ">= 1"},
    {"flag with padding", R"({"rows": [{"documents": [4], "right_pad": 1}], "mask": "causal-bottom-right"})",
     "rows[0]", "no padding"},
};

TEST(CaseJson, MalformedFilesNameTheField) {
  TempDir dir;
  int index = 0;
  for (const Malformed& m : kMalformed) {
    SCOPED_TRACE(m.what);
    const std::string path = dir.File(fmt::format("bad{}.json", index++));
    {
      std::ofstream out(path);
      out << m.text;
    }
    try {
      ReadCaseFile(path);
      ADD_FAILURE() << "no error for " << m.text;
    } catch (const InputError& e) {
      EXPECT_EQ(e.file(), path);
      EXPECT_EQ(e.field(), m.field) << e.what();
      EXPECT_NE(e.reason().find(m.reason), std::string::npos) << e.what();
      const std::string what = e.what();
      EXPECT_NE(what.find(path), std::string::npos) << what;
      EXPECT_NE(what.find(m.field), std::string::npos) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
  }
  EXPECT_GE(index, 8);
}

// ---- sources and Decode ----

TEST(RandomSource, SameCaseForSameSeedAndIndex) {
  const Capabilities caps = Everything();
  std::set<uint64_t> hashes;
  for (uint64_t i = 0; i < 200; ++i) {
    RandomSource a(7, i);
    RandomSource b(7, i);
    const Case first = Decode(a, caps);
    const Case second = Decode(b, caps);
    EXPECT_EQ(first, second);
    EXPECT_EQ(a.draws(), b.draws());
    hashes.insert(Hash(first));
  }
  EXPECT_GT(hashes.size(), 195u) << "case index must change the case";
  RandomSource s7(7, 0), s8(8, 0);
  EXPECT_NE(Decode(s7, caps), Decode(s8, caps));
}

TEST(RandomSource, GoldenDraws) {
  // Pinned values: a campaign's case i of seed s must be the same on every
  // machine and compiler; a change here breaks every recorded campaign.
  RandomSource src(7, 3);
  std::vector<int64_t> draws;
  for (int i = 0; i < 4; ++i) draws.push_back(src.Int(0, 999, "x"));
  EXPECT_EQ(draws, (std::vector<int64_t>{985, 676, 210, 482}));
}

TEST(RandomSource, IntStaysInRange) {
  RandomSource src(1, 2);
  std::set<int64_t> seen;
  for (int i = 0; i < 2000; ++i) {
    const int64_t v = src.Int(-3, 3, "v");
    ASSERT_GE(v, -3);
    ASSERT_LE(v, 3);
    seen.insert(v);
  }
  EXPECT_EQ(seen.size(), 7u);
  EXPECT_EQ(src.Int(5, 5, "fixed"), 5);
  const int64_t full = src.Int(INT64_MIN, INT64_MAX, "full");
  (void)full;
  int trues = 0;
  for (int i = 0; i < 1000; ++i) trues += src.Bool("b");
  EXPECT_GT(trues, 400);
  EXPECT_LT(trues, 600);
}

TEST(Decode, AllMinimumDrawsGiveTheSmallestCase) {
  MinSource src;
  const Case c = Decode(src, Capabilities{});
  EXPECT_EQ(ValidateText(c), "ok");
  EXPECT_EQ(c.batch(), 1);
  EXPECT_EQ(c.q_heads, 1);
  EXPECT_EQ(c.kv_heads, 1);
  EXPECT_EQ(c.head_dim, 2);
  EXPECT_EQ(c.key_len(), 1);
  EXPECT_EQ(c.query_len, 1);
  EXPECT_EQ(c.seed, 0u);
  MinSource again;
  EXPECT_EQ(ValidateText(Decode(again, Everything())), "ok");
}

TEST(Decode, AllMaximumDrawsAreValid) {
  MaxSource src;
  const Case c = Decode(src, Everything());
  EXPECT_EQ(ValidateText(c), "ok") << ToLine(c);
  Capabilities tiny;
  tiny.max_batch = 0;
  tiny.max_heads = 0;
  tiny.max_tokens = 0;
  tiny.max_head_dim = 0;
  tiny.max_position = 0;
  tiny.dtypes.clear();
  tiny.masks.clear();
  tiny.encodings.clear();
  MaxSource again;
  EXPECT_EQ(ValidateText(Decode(again, tiny)), "ok");
}

RC_GTEST_PROP(Decode, EveryCaseIsValid, ()) {
  RcSource src;
  const Case c = Decode(src, Everything());
  const std::optional<std::string> problem = Validate(c);
  RC_ASSERT(!problem.has_value());
}

bool Contains(const auto& list, const auto& value) {
  return std::find(list.begin(), list.end(), value) != list.end();
}

Capabilities Restricted() {
  Capabilities caps;
  caps.dtypes = {Dtype::kBf16};
  caps.masks = {MaskConvention::kBoolBlocked, MaskConvention::kCausalBottomRight};
  caps.encodings = {EncodingKind::kAlibi, EncodingKind::kRope, EncodingKind::kXpos};
  caps.rope_layouts = {RopeLayout::kInterleaved};
  caps.rope_scalings = {RopeScaling::kYarn, RopeScaling::kLlama3};
  caps.gqa = false;
  caps.softcap = false;
  caps.value_dim_differs = false;
  caps.max_batch = 2;
  caps.max_heads = 3;
  caps.max_tokens = 17;
  caps.max_head_dim = 12;
  caps.max_position = 300;
  return caps;
}

// Empty string when `c` lies inside `caps`, else what is outside.
std::string OutsideCapabilities(const Case& c, const Capabilities& caps) {
  if (auto problem = Validate(c)) return *problem;
  if (!Contains(caps.dtypes, c.dtype)) return "dtype";
  if (!Contains(caps.masks, c.mask)) return "mask";
  if (!Contains(caps.encodings, c.encoding.kind)) return "encoding";
  if (c.encoding.kind == EncodingKind::kRope) {
    if (!Contains(caps.rope_layouts, c.encoding.rope.layout)) return "rope layout";
    if (!Contains(caps.rope_scalings, c.encoding.rope.scaling)) return "rope scaling";
  }
  if (!caps.gqa && c.kv_heads != c.q_heads) return "kv_heads";
  if (!caps.value_dim_differs && c.value_dim != c.head_dim) return "value_dim";
  if (!caps.softcap && c.softcap != 0) return "softcap";
  if (c.batch() > caps.max_batch) return "batch";
  if (c.q_heads > caps.max_heads) return "q_heads";
  if (c.key_len() > caps.max_tokens) return "key_len";
  if (c.head_dim > caps.max_head_dim || c.value_dim > caps.max_head_dim) return "head_dim";
  if (LargestPosition(c) > caps.max_position) return "position";
  if (IsCausalFlag(c.mask) && c.visibility != VisibilityKind::kCausal) return "flag";
  return "";
}

RC_GTEST_PROP(Decode, RespectsCapabilities, ()) {
  RcSource src;
  const Capabilities caps = Restricted();
  const Case c = Decode(src, caps);
  RC_ASSERT(OutsideCapabilities(c, caps) == std::string());
}

TEST(Decode, RespectsCapabilitiesOverManyRandomCases) {
  const Capabilities caps = Restricted();
  std::set<MaskConvention> masks;
  std::set<EncodingKind> encodings;
  for (int i = 0; i < 2000; ++i) {
    RandomSource src(5, i);
    const Case c = Decode(src, caps);
    ASSERT_EQ(OutsideCapabilities(c, caps), "") << ToLine(c);
    masks.insert(c.mask);
    encodings.insert(c.encoding.kind);
  }
  EXPECT_EQ(masks.size(), 2u);
  EXPECT_EQ(encodings.size(), 3u);
  const Capabilities everything = Everything();
  for (int i = 0; i < 2000; ++i) {
    RandomSource src(6, i);
    const Case c = Decode(src, everything);
    ASSERT_EQ(OutsideCapabilities(c, everything), "") << ToLine(c);
  }
}

TEST(Decode, CausalFlagCasesAreExpressible) {
  Capabilities caps = Everything();
  for (MaskConvention flag : {MaskConvention::kCausalTopLeft, MaskConvention::kCausalBottomRight}) {
    caps.masks = {flag};
    bool decode_shorter = false;
    for (int i = 0; i < 300; ++i) {
      RandomSource src(9, i);
      const Case c = Decode(src, caps);
      ASSERT_EQ(ValidateText(c), "ok") << ToLine(c);
      EXPECT_EQ(c.visibility, VisibilityKind::kCausal);
      for (const RowSpec& row : c.rows) {
        EXPECT_EQ(row.documents.size(), 1u);
        EXPECT_EQ(row.left_pad + row.right_pad + row.position_offset, 0);
      }
      if (flag == MaskConvention::kCausalTopLeft) {
        EXPECT_EQ(c.query_len, c.key_len());
        EXPECT_TRUE(c.decode_chunks.empty());
      }
      decode_shorter |= c.query_len < c.key_len();
    }
    EXPECT_EQ(decode_shorter, flag == MaskConvention::kCausalBottomRight);
  }
}

TEST(Decode, XposPositionsStaySmall) {
  Capabilities caps = Everything();
  caps.encodings = {EncodingKind::kXpos};
  for (int i = 0; i < 500; ++i) {
    RandomSource src(10, i);
    const Case c = Decode(src, caps);
    for (const RowSpec& row : c.rows) ASSERT_LE(row.position_offset, kXposMaxOffset) << ToLine(c);
    EXPECT_EQ(c.encoding.rope.scaling, RopeScaling::kNone);
  }
}

TEST(Decode, HitsTheBoundaries) {
  Capabilities caps = Everything();
  caps.max_tokens = 130;
  std::map<int, int> key_lengths;
  int decode = 0, prefill = 0, far_positions = 0, odd_heads = 0, partial_rotary = 0, empty_documents = 0;
  int packed = 0, left_padded = 0, right_padded = 0, gqa = 0, chunked_decode = 0, value_dim_differs = 0;
  int fully_padded = 0, query_on_pad = 0;
  int window_at_t = 0, window_one = 0, context_at_t = 0, odd_head_dim = 0;
  std::set<VisibilityKind> visibilities;
  std::set<RopeScaling> scalings;
  std::set<ValueProfile> profiles;
  for (int i = 0; i < 3000; ++i) {
    RandomSource src(2024, i);
    const Case c = Decode(src, caps);
    ASSERT_EQ(ValidateText(c), "ok") << ToLine(c);
    const int tk = c.key_len();
    ++key_lengths[tk];
    (c.query_len < tk ? decode : prefill) += 1;
    odd_heads += (c.q_heads & (c.q_heads - 1)) != 0;
    gqa += c.kv_heads != c.q_heads;
    odd_head_dim += c.head_dim % 2;
    value_dim_differs += c.value_dim != c.head_dim;
    partial_rotary += c.encoding.kind == EncodingKind::kRope && c.rotary_dim() < c.head_dim;
    chunked_decode += !c.decode_chunks.empty();
    window_at_t += c.visibility == VisibilityKind::kSlidingWindow && c.window == tk;
    window_one += c.visibility == VisibilityKind::kSlidingWindow && c.window == 1;
    context_at_t += c.encoding.kind == EncodingKind::kRope &&
                    c.encoding.rope.original_context == LargestPosition(c) + 1;
    visibilities.insert(c.visibility);
    profiles.insert(c.profile);
    if (c.encoding.kind == EncodingKind::kRope) scalings.insert(c.encoding.rope.scaling);
    for (const RowSpec& row : c.rows) {
      far_positions += row.position_offset >= 65535;
      empty_documents += std::count(row.documents.begin(), row.documents.end(), 0) > 0;
      packed += row.documents.size() > 1;
      left_padded += row.left_pad > 0;
      right_padded += row.right_pad > 0;
      fully_padded += row.real_tokens() == 0;
    }
    // The last Tq slots are the queries: a right pad there is a query with no key.
    query_on_pad += std::any_of(c.rows.begin(), c.rows.end(), [](const RowSpec& r) { return r.right_pad > 0; });
  }
  for (int tk : {1, 2, 3, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129}) EXPECT_GT(key_lengths[tk], 0) << "Tk=" << tk;
  EXPECT_GT(decode, 300);
  EXPECT_GT(prefill, 300);
  EXPECT_GT(far_positions, 0);
  EXPECT_GT(odd_heads, 0);
  EXPECT_GT(gqa, 0);
  EXPECT_GT(odd_head_dim, 0);
  EXPECT_GT(value_dim_differs, 0);
  EXPECT_GT(partial_rotary, 0);
  EXPECT_GT(empty_documents, 0);
  EXPECT_GT(packed, 0);
  EXPECT_GT(left_padded, 0);
  EXPECT_GT(right_padded, 0);
  EXPECT_GT(fully_padded, 0);
  EXPECT_GT(query_on_pad, 300);
  EXPECT_GT(chunked_decode, 0);
  EXPECT_GT(window_at_t, 0);
  EXPECT_GT(window_one, 0);
  EXPECT_GT(context_at_t, 0);
  EXPECT_EQ(visibilities.size(), kAllVisibilityKinds.size());
  EXPECT_EQ(scalings.size(), kAllRopeScalings.size());
  EXPECT_EQ(profiles.size(), kAllValueProfiles.size());
}

}  // namespace
}  // namespace attncheck
