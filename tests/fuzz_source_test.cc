// FdpSource (fuzz/fdp_source.h) and its inverse, the seed encoder
// (fuzz/seed_encoding.h): byte widths, exhaustion to minimums, and cases that
// encode to bytes decoding back to themselves.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "adapters/registry.h"
#include "cases/case_json.h"
#include "cases/decode.h"
#include "cases/error.h"
#include "cases/random_source.h"
#include "fuzz/fdp_source.h"
#include "fuzz/seed_encoding.h"

namespace attncheck {
namespace {

TEST(FdpSource, WidthIsTheFewestBytesCoveringTheSpan) {
  EXPECT_EQ(FdpIntWidth(5, 5), 0);
  EXPECT_EQ(FdpIntWidth(5, 4), 0);
  EXPECT_EQ(FdpIntWidth(0, 1), 1);
  EXPECT_EQ(FdpIntWidth(0, 255), 1);
  EXPECT_EQ(FdpIntWidth(0, 256), 2);
  EXPECT_EQ(FdpIntWidth(-10, 245), 1);
  EXPECT_EQ(FdpIntWidth(0, int64_t{1} << 31), 4);
  EXPECT_EQ(FdpIntWidth(std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()), 8);
}

TEST(FdpSource, ReadsLittleEndianAndReducesModuloTheSpan) {
  const std::vector<uint8_t> bytes = {0x34, 0x12, 25, 0xff, 0x02, 0x03};
  FdpSource s(bytes);
  EXPECT_EQ(s.Int(0, 65535, "a"), 0x1234);
  EXPECT_EQ(s.Int(10, 19, "b"), 10 + 25 % 10);
  EXPECT_EQ(s.Int(7, 7, "c"), 7);  // consumes nothing
  EXPECT_EQ(s.consumed(), 3u);
  EXPECT_EQ(s.Int(-1, 1, "d"), -1 + 0xff % 3);
  EXPECT_FALSE(s.Bool("e"));  // 0x02: low bit clear
  EXPECT_TRUE(s.Bool("f"));   // 0x03
  EXPECT_EQ(s.remaining(), 0u);
}

TEST(FdpSource, OutOfBytesGivesMinimums) {
  const std::vector<uint8_t> one = {7};
  FdpSource s(one);
  EXPECT_EQ(s.Int(0, 65535, "partial"), 7);  // the missing high byte counts as zero
  EXPECT_EQ(s.Int(3, 900, "empty"), 3);
  EXPECT_FALSE(s.Bool("empty"));
  EXPECT_EQ(s.Int(std::numeric_limits<int64_t>::min(), 0, "empty"), std::numeric_limits<int64_t>::min());
}

TEST(FdpSource, EmptyInputDecodesToTheSmallestCase) {
  const Capabilities caps = MakeAdapter("eigen")->capabilities();
  FdpSource s(nullptr, 0);
  const Case c = Decode(s, caps);
  EXPECT_EQ(c.batch(), 1);
  EXPECT_EQ(c.q_heads, 1);
  EXPECT_EQ(c.kv_heads, 1);
  EXPECT_EQ(c.head_dim, 2);
  EXPECT_EQ(c.key_len(), 1);
  EXPECT_EQ(c.query_len, 1);
  EXPECT_EQ(c.visibility, VisibilityKind::kCausal);
  EXPECT_TRUE(c.decode_chunks.empty());
  EXPECT_EQ(c.seed, 0u);
}

TEST(FdpSource, AppendedDrawsReadBack) {
  struct Draw {
    int64_t lo, hi, value;
  };
  const std::vector<Draw> draws = {{0, 1, 1},         {0, 255, 200},        {0, 256, 256},
                                   {-5, 5, -3},       {10, 10, 10},         {0, int64_t{1} << 31, 123456789},
                                   {1, 129, 64},      {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(), -42}};
  std::vector<uint8_t> bytes;
  for (const Draw& d : draws) AppendFdpInt(bytes, d.lo, d.hi, d.value);
  AppendFdpBool(bytes, true);
  AppendFdpBool(bytes, false);
  FdpSource s(bytes);
  for (const Draw& d : draws) EXPECT_EQ(s.Int(d.lo, d.hi, "x"), d.value) << d.lo << ".." << d.hi;
  EXPECT_TRUE(s.Bool("t"));
  EXPECT_FALSE(s.Bool("f"));
  EXPECT_EQ(s.remaining(), 0u);
}

// Every case Decode can draw inside the capabilities has bytes that give it back.
TEST(SeedEncoding, CasesInsideTheCapabilitiesEncodeExactly) {
  for (const char* adapter : {"eigen", "tiled-f16"}) {
    const Capabilities caps = MakeAdapter(adapter)->capabilities();
    for (uint64_t i = 0; i < 12; ++i) {
      RandomSource random(7, i);
      const Case want = Decode(random, caps);
      const SeedEncoding e = EncodeCase(want, caps);
      ASSERT_TRUE(e.exact) << adapter << " case " << i << "\n  want " << ToLine(want) << "\n  got  "
                           << ToLine(e.decoded);
      FdpSource s(e.bytes);
      EXPECT_EQ(Decode(s, caps), want) << adapter << " case " << i;
    }
  }
}

// A case the capabilities exclude gives the nearest case they allow, still valid.
TEST(SeedEncoding, CaseOutsideTheCapabilitiesGivesAValidNearestCase) {
  Capabilities caps = MakeAdapter("eigen")->capabilities();
  caps.max_tokens = 8;
  Case want;
  want.rows = {RowSpec{.documents = {20}}};
  want.query_len = 20;
  want.head_dim = want.value_dim = 4;
  const SeedEncoding e = EncodeCase(want, caps);
  EXPECT_FALSE(e.exact);
  EXPECT_EQ(Validate(e.decoded), std::nullopt);
  EXPECT_EQ(e.decoded.head_dim, 4);  // the fields that fit are kept
  FdpSource s(e.bytes);
  EXPECT_EQ(Decode(s, caps), e.decoded);
}

// Found by case_json_fuzz: a number beyond double range is bad input, not an
// internal error (nlohmann throws out_of_range, not parse_error, for it).
TEST(CaseFileText, NumberOverflowIsAnInputError) {
  try {
    ParseCaseText(R"({"rows": [{"documents": [1]}], "scale": 1e400})", "big.json");
    FAIL() << "accepted a number beyond double range";
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), "big.json");
    EXPECT_NE(std::string(e.what()).find("not valid JSON"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace attncheck
