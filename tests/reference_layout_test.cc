// Tests of the reference layout, visibility and mask conversions against the
// worked example (seed 000: causal 4×4, packed [A,B,EOS,D,E,EOS], left padding
// with cumsum position ids, prefix-LM, cached decode p_i = T_past + i).
#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <Eigen/Core>
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "cases/case.h"
#include "reference/data.h"
#include "reference/examples.h"
#include "reference/layout.h"
#include "reference/mask.h"
#include "reference/scenario.h"
#include "reference/show.h"
#include "reference/visibility.h"

namespace attncheck::reference {
namespace {

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream stream(text);
  for (std::string line; std::getline(stream, line);) lines.push_back(line);
  return lines;
}

// The value after "label: " in Show's output.
std::string Field(const std::string& text, const std::string& label) {
  for (const std::string& line : Lines(text)) {
    if (line.rfind(label + ": ", 0) == 0) return line.substr(label.size() + 2);
  }
  return "<missing " + label + ">";
}

// The Tq matrix lines of Show's output.
std::vector<std::string> Matrix(const std::string& text) {
  const std::vector<std::string> lines = Lines(text);
  std::vector<std::string> matrix;
  for (size_t n = 0; n < lines.size(); ++n) {
    if (lines[n] != "visibility (rows = queries, 1 = visible):") continue;
    for (size_t m = n + 1; m < lines.size() && !lines[m].empty() && (lines[m][0] == '0' || lines[m][0] == '1'); ++m) {
      matrix.push_back(lines[m]);
    }
  }
  return matrix;
}

std::string ShowExample(std::string_view name, int query = -1) {
  const std::optional<Case> c = ExampleCase(name);
  EXPECT_TRUE(c.has_value()) << name;
  return Show(MakeScenario(*c), 0, query);
}

using Rows = std::vector<std::string>;

TEST(Examples, Causal4IsLowerTriangular) {
  const std::string text = ShowExample("causal4");
  EXPECT_EQ(Matrix(text), (Rows{"1 0 0 0", "1 1 0 0", "1 1 1 0", "1 1 1 1"})) << text;
  EXPECT_EQ(Field(text, "key positions"), "0 1 2 3");
  EXPECT_EQ(Field(text, "query positions"), "0 1 2 3");
  EXPECT_EQ(Field(text, "row 3 sees keys"), "0 1 2 3");
}

TEST(Examples, Packed6IsBlockDiagonalWithResetPositions) {
  const std::string text = ShowExample("packed6");
  EXPECT_EQ(Matrix(text), (Rows{"1 0 0 0 0 0", "1 1 0 0 0 0", "1 1 1 0 0 0", "0 0 0 1 0 0", "0 0 0 1 1 0",
                                "0 0 0 1 1 1"}))
      << text;
  EXPECT_EQ(Field(text, "key positions"), "0 1 2 0 1 2");
  EXPECT_EQ(Field(text, "documents"), "0 0 0 1 1 1");
  EXPECT_EQ(Field(text, "row 5 sees keys"), "3 4 5");
}

TEST(Examples, Leftpad5UsesCumsumPositionsAndHidesPads) {
  const std::string text = ShowExample("leftpad5");
  EXPECT_EQ(Matrix(text), (Rows{"0 0 0 0 0", "0 0 0 0 0", "0 0 1 0 0", "0 0 1 1 0", "0 0 1 1 1"})) << text;
  EXPECT_EQ(Field(text, "key positions"), "0 0 0 1 2");
  EXPECT_EQ(Field(text, "key valid"), "0 0 1 1 1");
  EXPECT_EQ(Field(text, "documents"), "- - 0 0 0");
  EXPECT_EQ(Field(text, "row 4 sees keys"), "2 3 4");
  const std::string pad_query = ShowExample("leftpad5", 0);
  EXPECT_NE(pad_query.find("row 0 sees no key (all masked)"), std::string::npos) << pad_query;
  EXPECT_EQ(Field(pad_query, "attention row 0 (head 0)"), "0.0000 0.0000 0.0000 0.0000 0.0000");
  const Scenario s = MakeLayout(*ExampleCase("leftpad5"));
  EXPECT_EQ(s.empty_row, (std::vector<uint8_t>{1, 1, 0, 0, 0}));
  EXPECT_TRUE(RealRowsWithNoVisibleKey(s.visible, s.query_valid, 1, 5, 5).empty());
}

TEST(Examples, PrefixLmPrefixIsBidirectionalSuffixCausal) {
  const std::string text = ShowExample("prefixlm");
  EXPECT_EQ(Matrix(text), (Rows{"1 1 1 0 0 0", "1 1 1 0 0 0", "1 1 1 0 0 0", "1 1 1 1 0 0", "1 1 1 1 1 0",
                                "1 1 1 1 1 1"}))
      << text;
  EXPECT_EQ(Field(text, "key positions"), "0 1 2 3 4 5");
}

TEST(Examples, DecodeIsBottomRightCausal) {
  const std::string text = ShowExample("decode");
  EXPECT_EQ(Matrix(text), (Rows{"1 1 1 1 1 1 0", "1 1 1 1 1 1 1"})) << text;
  EXPECT_EQ(Field(text, "query positions"), "5 6");
  EXPECT_EQ(Field(text, "key positions"), "0 1 2 3 4 5 6");
  EXPECT_EQ(Field(text, "row 1 sees keys"), "0 1 2 3 4 5 6");
}

TEST(Examples, NamesAreAllKnown) {
  EXPECT_EQ(ExampleNames().size(), 5u);
  for (std::string_view name : ExampleNames()) EXPECT_TRUE(ExampleCase(name).has_value()) << name;
  EXPECT_FALSE(ExampleCase("no-such-example").has_value());
}

TEST(Show, AttentionRowIsADistributionOverVisibleKeys) {
  const std::string text = ShowExample("packed6", 4);
  std::istringstream row(Field(text, "attention row 4 (head 0)"));
  std::vector<double> probabilities;
  for (double p; row >> p;) probabilities.push_back(p);
  ASSERT_EQ(probabilities.size(), 6u) << text;
  EXPECT_EQ(probabilities[0] + probabilities[1] + probabilities[2] + probabilities[5], 0.0);
  EXPECT_NEAR(probabilities[3] + probabilities[4], 1.0, 2e-4);
  EXPECT_NE(text.find("case: Case("), std::string::npos) << text;
}

Case OneRowCase(RowSpec row, int query_len, VisibilityKind visibility) {
  Case c;
  c.head_dim = 4;
  c.value_dim = 4;
  c.query_len = query_len;
  c.rows = {std::move(row)};
  c.visibility = visibility;
  return c;
}

TEST(Visibility, SlidingWindowSeesWKeysIncludingSelf) {
  Case c = OneRowCase(RowSpec{.documents = {5}}, 5, VisibilityKind::kSlidingWindow);
  c.window = 2;
  EXPECT_EQ(Matrix(Show(MakeLayout(c), 0)),
            (Rows{"1 0 0 0 0", "1 1 0 0 0", "0 1 1 0 0", "0 0 1 1 0", "0 0 0 1 1"}));
  c.window = 1;
  EXPECT_EQ(Matrix(Show(MakeLayout(c), 0)),
            (Rows{"1 0 0 0 0", "0 1 0 0 0", "0 0 1 0 0", "0 0 0 1 0", "0 0 0 0 1"}));
}

TEST(Visibility, ChunkedIsCausalInsideChunksOfEachDocument) {
  Case c = OneRowCase(RowSpec{.documents = {5}}, 5, VisibilityKind::kChunked);
  c.chunk = 2;
  EXPECT_EQ(Matrix(Show(MakeLayout(c), 0)),
            (Rows{"1 0 0 0 0", "1 1 0 0 0", "0 0 1 0 0", "0 0 1 1 0", "0 0 0 0 1"}));
  // Chunks restart with pos_in_doc in every packed document.
  Case packed = OneRowCase(RowSpec{.documents = {3, 2}}, 5, VisibilityKind::kChunked);
  packed.chunk = 2;
  EXPECT_EQ(Matrix(Show(MakeLayout(packed), 0)),
            (Rows{"1 0 0 0 0", "1 1 0 0 0", "0 0 1 0 0", "0 0 0 1 0", "0 0 0 1 1"}));
}

TEST(Visibility, BidirectionalSeesEveryRealKeyOfItsDocument) {
  const Case c = OneRowCase(RowSpec{.left_pad = 1, .right_pad = 1, .documents = {2, 1}}, 5,
                            VisibilityKind::kBidirectional);
  EXPECT_EQ(Matrix(Show(MakeLayout(c), 0, 1)),
            (Rows{"0 0 0 0 0", "0 1 1 0 0", "0 1 1 0 0", "0 0 0 1 0", "0 0 0 0 0"}));
}

TEST(Visibility, RealRowsWithNoVisibleKeyNamesTheOffendingRows) {
  const std::vector<uint8_t> visible = {1, 0, 0, 0, 0, 0, 0, 1};  // [B=2, Tq=2, Tk=2]
  const std::vector<uint8_t> query_valid = {1, 1, 0, 1};
  EXPECT_EQ(EmptyRows(visible, 2, 2, 2), (std::vector<uint8_t>{0, 1, 1, 0}));
  EXPECT_EQ(RealRowsWithNoVisibleKey(visible, query_valid, 2, 2, 2), (std::vector<QueryRow>{{0, 1}}));
}

TEST(Layout, CumsumPositionIdsIsTheHfFormula) {
  const std::vector<uint8_t> mask = {0, 0, 1, 1, 1};
  EXPECT_EQ(CumsumPositionIds(mask), (std::vector<int>{0, 0, 0, 1, 2}));
  const std::vector<uint8_t> right = {1, 1, 0};
  EXPECT_EQ(CumsumPositionIds(right), (std::vector<int>{0, 1, 0}));
  EXPECT_TRUE(CumsumPositionIds({}).empty());
}

TEST(Layout, PositionOffsetShiftsEveryDocument) {
  const RowLayout row = LayoutRow(RowSpec{.left_pad = 1, .documents = {2, 0, 2}, .position_offset = 7});
  EXPECT_EQ(row.positions, (std::vector<int>{0, 7, 8, 7, 8}));
  EXPECT_EQ(row.doc, (std::vector<int>{-1, 0, 0, 2, 2}));  // the zero-length document 1 holds no slot
  EXPECT_EQ(row.pos_in_doc, (std::vector<int>{-1, 0, 1, 0, 1}));
  EXPECT_EQ(row.real_index, (std::vector<int>{-1, 0, 1, 2, 3}));
}

TEST(Mask, AdditiveFillsAsStoredInTheDtype) {
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(AdditiveFill(MaskConvention::kAdditiveNegInf, Dtype::kF16), -inf);
  EXPECT_EQ(AdditiveFill(MaskConvention::kAdditiveLowest, Dtype::kF32), -3.4028234663852886e38);
  EXPECT_EQ(AdditiveFill(MaskConvention::kAdditiveLowest, Dtype::kF16), -65504.0);
  EXPECT_EQ(AdditiveFill(MaskConvention::kAdditiveLowest, Dtype::kBf16), -3.3895313892515355e38);
  EXPECT_EQ(AdditiveFill(MaskConvention::kAdditiveMinus1e4, Dtype::kF32), -1e4);
  EXPECT_EQ(AdditiveFill(MaskConvention::kAdditiveMinus1e4, Dtype::kF16), -10000.0);
  EXPECT_EQ(AdditiveFill(MaskConvention::kAdditiveMinus1e4, Dtype::kBf16), -9984.0);
  EXPECT_EQ(AdditiveFill(MaskConvention::kAdditiveMinus1e9, Dtype::kF32), -1e9);
  EXPECT_EQ(AdditiveFill(MaskConvention::kAdditiveMinus1e9, Dtype::kF16), -inf);  // overflow
  const double bf16_1e9 = AdditiveFill(MaskConvention::kAdditiveMinus1e9, Dtype::kBf16);
  EXPECT_EQ(bf16_1e9, -998244352.0);  // 238 · 2^22
  EXPECT_EQ(bf16_1e9, static_cast<double>(static_cast<float>(Eigen::bfloat16(-1e9f))));
}

TEST(Mask, ToAdditiveAndToBoolPolarity) {
  const std::vector<uint8_t> visible = {1, 0, 0, 1};
  const std::vector<float> additive = ToAdditive(visible, MaskConvention::kAdditiveLowest, Dtype::kF16);
  EXPECT_EQ(additive, (std::vector<float>{0.0f, -65504.0f, -65504.0f, 0.0f}));
  const std::vector<float> neg_inf = ToAdditive(visible, MaskConvention::kAdditiveMinus1e9, Dtype::kF16);
  EXPECT_TRUE(std::isinf(neg_inf[1]) && neg_inf[1] < 0);
  EXPECT_EQ(ToBool(visible, MaskConvention::kBoolVisible), (std::vector<uint8_t>{1, 0, 0, 1}));
  EXPECT_EQ(ToBool(visible, MaskConvention::kBoolBlocked), (std::vector<uint8_t>{0, 1, 1, 0}));
}

TEST(Mask, CausalFlagPatternsTopLeftVersusBottomRight) {
  EXPECT_EQ(CausalFlagPattern(MaskConvention::kCausalTopLeft, 2, 4),
            (std::vector<uint8_t>{1, 0, 0, 0, 1, 1, 0, 0}));
  EXPECT_EQ(CausalFlagPattern(MaskConvention::kCausalBottomRight, 2, 4),
            (std::vector<uint8_t>{1, 1, 1, 0, 1, 1, 1, 1}));
  EXPECT_EQ(CausalFlagPattern(MaskConvention::kCausalTopLeft, 3, 3),
            CausalFlagPattern(MaskConvention::kCausalBottomRight, 3, 3));
  // The decode example is the bottom-right pattern.
  EXPECT_EQ(MakeLayout(*ExampleCase("decode")).visible, CausalFlagPattern(MaskConvention::kCausalBottomRight, 2, 7));
}

TEST(Data, RoundToIsASingleRounding) {
  // 1 + 2^-11 + 2^-40 lies just above the f16 midpoint between 1 and 1 + 2^-10;
  // double → float → half would hit the tie exactly and round to even (1).
  EXPECT_EQ(RoundTo(Dtype::kF16, 1.0 + 0x1.0p-11 + 0x1.0p-40), 1.0 + 0x1.0p-10);
  EXPECT_EQ(RoundTo(Dtype::kBf16, 1.0 + 0x1.0p-8 + 0x1.0p-40), 1.0 + 0x1.0p-7);
  EXPECT_EQ(RoundTo(Dtype::kF16, 1.0 + 0x1.0p-11), 1.0);  // a real tie goes to even
  EXPECT_EQ(RoundTo(Dtype::kF16, 70000.0), std::numeric_limits<double>::infinity());
  EXPECT_EQ(RoundTo(Dtype::kF32, 0.1), static_cast<double>(0.1f));
  for (int n = 0; n < 10000; ++n) {  // on float inputs Eigen's conversions are single roundings
    const float x = static_cast<float>(Element(n, ValueProfile::kLargeLogits, 0, 0, 0, n, 0));
    EXPECT_EQ(RoundTo(Dtype::kF16, x), static_cast<double>(static_cast<float>(Eigen::half(x))));
    EXPECT_EQ(RoundTo(Dtype::kBf16, x), static_cast<double>(static_cast<float>(Eigen::bfloat16(x))));
  }
}

TEST(Data, ProfilesHaveTheirShape) {
  double sum = 0, sum_sq = 0;
  const int n = 20000;
  for (int t = 0; t < n; ++t) {
    const double x = Element(3, ValueProfile::kNormal, 0, 0, 0, t, 1);
    sum += x;
    sum_sq += x * x;
  }
  EXPECT_NEAR(sum / n, 0.0, 0.05);
  EXPECT_NEAR(sum_sq / n, 1.0, 0.05);
  for (int t = 0; t < 100; ++t) {
    const double tie = Element(1, ValueProfile::kTies, t % 3, 0, 0, t, t % 5);
    EXPECT_TRUE(tie == -1.0 || tie == 0.0 || tie == 1.0) << tie;
    const double v = Element(1, ValueProfile::kNearCancellation, kDataValue, 0, 0, t, 2);
    EXPECT_GE(std::abs(v), 50.0);
    EXPECT_LT(std::abs(v), 50.25);
    EXPECT_EQ(v > 0, t % 2 == 0);
    EXPECT_EQ(Element(1, ValueProfile::kLargeLogits, kDataKey, 0, 0, t, 2),
              8.0 * Element(1, ValueProfile::kNormal, kDataKey, 0, 0, t, 2));
  }
  EXPECT_NE(Element(1, ValueProfile::kNormal, kDataQuery, 0, 0, 5, 0),
            Element(2, ValueProfile::kNormal, kDataQuery, 0, 0, 5, 0));
}

// CaseElementRow's rows (eight elements per step where the CPU allows) are
// CaseElement's values, for every profile, dtype, tensor and row length.
TEST(Data, ElementRowsAreTheElements) {
  for (const ValueProfile profile : kAllValueProfiles)
    for (const Dtype dtype : kAllDtypes) {
      Case c;
      c.dtype = dtype;
      c.profile = profile;
      c.seed = 11;
      c.head_dim = c.value_dim = 21;
      for (const int tensor : {kDataQuery, kDataKey, kDataValue})
        for (int dims = 1; dims <= 21; dims += 4)
          for (int64_t token = -2; token < 40; token += 3) {
            double row[21];
            CaseElementRow(c, tensor, 1, 2, token, dims, row);
            for (int d = 0; d < dims; ++d) {
              ASSERT_EQ(row[d], CaseElement(c, tensor, 1, 2, token, d)) << Name(profile) << " " << Name(dtype) << " tensor " << tensor << " dims "
                                      << dims << " token " << token << " d " << d;
            }
          }
    }
}

// extreme-logits: scores below −5e4 and beyond ±1e4 in f32 (a finite running-max
// sentinel at −5e4 is reachable), while in f16 q·k stays under half of 65504 so no
// score rounds to ±inf; the q·k of the last dim is exact in the dtype.
TEST(Data, ExtremeLogitsReachBeyondTheSentinels) {
  for (const Dtype dtype : kAllDtypes) {
    Case c;
    c.dtype = dtype;
    c.head_dim = c.value_dim = 16;
    c.scale = 0.125;
    c.profile = ValueProfile::kExtremeLogits;
    double lowest = 0.0, highest = 0.0, largest_dot = 0.0;
    for (int64_t token = 0; token < 64; ++token) {
      double q[16], k[16], dot = 0.0;
      CaseElementRow(c, kDataQuery, 0, 0, token, 16, q);
      CaseElementRow(c, kDataKey, 0, 0, token, 16, k);
      EXPECT_EQ(q[15], CaseElement(c, kDataQuery, 0, 0, token, 15));
      EXPECT_EQ(k[15], 64.0);
      for (int d = 0; d < 16; ++d) dot += q[d] * k[d];
      lowest = std::min(lowest, c.scale * dot);
      highest = std::max(highest, c.scale * dot);
      largest_dot = std::max(largest_dot, std::abs(dot));
    }
    if (dtype == Dtype::kF16) {
      EXPECT_LT(largest_dot, 65504.0 / 2 + 100);
      EXPECT_GT(largest_dot, 3e4);
    } else {
      EXPECT_LT(lowest, -5e4 - 200) << Name(dtype);
      EXPECT_GT(highest, 1e4) << Name(dtype);
    }
  }
}

TEST(Data, TokenIdentityCountsRealTokensAndNamesPadsBySlot) {
  const RowSpec row{.left_pad = 2, .right_pad = 1, .documents = {2, 1}};
  std::vector<int64_t> identities;
  for (int slot = 0; slot < row.slots(); ++slot) identities.push_back(TokenIdentity(row, slot));
  EXPECT_EQ(identities, (std::vector<int64_t>{1'000'000, 1'000'001, 0, 1, 2, 1'000'005}));
}

// ---- properties -------------------------------------------------------------

VisibilityKind DrawVisibility() {
  static constexpr VisibilityKind kinds[] = {VisibilityKind::kCausal, VisibilityKind::kBidirectional,
                                             VisibilityKind::kPrefixLm, VisibilityKind::kSlidingWindow,
                                             VisibilityKind::kChunked};
  return kinds[*rc::gen::inRange(0, 5).as("visibility")];
}

RowSpec DrawRow() {
  RowSpec row;
  row.left_pad = *rc::gen::inRange(0, 4).as("left_pad");
  row.right_pad = *rc::gen::inRange(0, 3).as("right_pad");
  const int documents = *rc::gen::inRange(1, 5).as("documents");
  for (int n = 0; n < documents; ++n) row.documents.push_back(*rc::gen::inRange(0, 6).as("document length"));
  row.prefix_len = *rc::gen::inRange(0, 4).as("prefix_len");
  row.position_offset = *rc::gen::inRange(0, 3).as("position_offset");
  return row;
}

Case DrawCase(RowSpec row) {
  Case c;
  c.head_dim = 4;
  c.value_dim = 3;
  c.visibility = DrawVisibility();
  c.window = *rc::gen::inRange(1, 5).as("window");
  c.chunk = *rc::gen::inRange(1, 5).as("chunk");
  c.seed = *rc::gen::inRange(0, 1000).as("seed");
  const int tk = row.slots();
  c.query_len = tk == 0 ? 0 : *rc::gen::inRange(1, tk + 1).as("query_len");
  c.rows = {std::move(row)};
  return c;
}

RC_GTEST_PROP(VisibilityProperty, PackedRowsAreBlockDiagonal, ()) {
  const Case c = DrawCase(DrawRow());
  const Scenario s = MakeLayout(c);
  for (int i = 0; i < s.tq; ++i) {
    const int slot = s.query_slot(i);
    for (int j = 0; j < s.tk; ++j) {
      if (!s.is_visible(0, i, j)) continue;
      RC_ASSERT(s.key_valid[static_cast<size_t>(j)] == 1);
      RC_ASSERT(s.key_doc[static_cast<size_t>(j)] == s.key_doc[static_cast<size_t>(slot)]);
    }
    // Every task visibility lets a real query read itself: real rows are never empty.
    RC_ASSERT(s.empty_row[static_cast<size_t>(i)] == (s.query_valid[static_cast<size_t>(i)] == 0 ? 1 : 0));
  }
  RC_ASSERT(RealRowsWithNoVisibleKey(s.visible, s.query_valid, s.batch, s.tq, s.tk).empty());
}

RC_GTEST_PROP(LayoutProperty, SingleDocumentRowsAgreeWithCumsum, ()) {
  RowSpec row;
  row.left_pad = *rc::gen::inRange(0, 6).as("left_pad");
  row.right_pad = *rc::gen::inRange(0, 3).as("right_pad");
  row.documents = {*rc::gen::inRange(0, 8).as("length")};
  const RowLayout layout = LayoutRow(row);
  RC_ASSERT(layout.positions == CumsumPositionIds(layout.valid));
}

RC_GTEST_PROP(LayoutProperty, LeftPaddingOnlyShiftsPads, ()) {
  RowSpec row = DrawRow();
  Case c = DrawCase(row);
  c.query_len = c.key_len();  // full prefill, so every slot is also a query
  const int extra = *rc::gen::inRange(1, 5).as("extra left pads");
  Case padded = c;
  padded.rows[0].left_pad += extra;
  padded.query_len = padded.key_len();
  const Scenario s = MakeScenario(c);
  const Scenario t = MakeScenario(padded);
  for (int j = 0; j < t.tk; ++j) {
    if (j < extra) {
      RC_ASSERT(t.key_valid[static_cast<size_t>(j)] == 0);
      RC_ASSERT(t.key_positions[static_cast<size_t>(j)] == 0);
      continue;
    }
    const int old = j - extra;
    RC_ASSERT(t.key_valid[static_cast<size_t>(j)] == s.key_valid[static_cast<size_t>(old)]);
    if (s.key_valid[static_cast<size_t>(old)] == 0) {
      RC_ASSERT(t.key_positions[static_cast<size_t>(j)] == 0);
      continue;
    }
    RC_ASSERT(t.key_positions[static_cast<size_t>(j)] == s.key_positions[static_cast<size_t>(old)]);
    RC_ASSERT(t.query_positions[static_cast<size_t>(j)] == s.query_positions[static_cast<size_t>(old)]);
    for (int d = 0; d < c.head_dim; ++d) {
      RC_ASSERT(t.q.at(0, 0, j, d) == s.q.at(0, 0, old, d));
      RC_ASSERT(t.k.at(0, 0, j, d) == s.k.at(0, 0, old, d));
    }
    for (int d = 0; d < c.value_dim; ++d) RC_ASSERT(t.v.at(0, 0, j, d) == s.v.at(0, 0, old, d));
    for (int i = extra; i < t.tq; ++i) {  // real keys are seen by the same (shifted) queries
      RC_ASSERT(t.is_visible(0, i, j) == s.is_visible(0, i - extra, old));
    }
  }
}

RC_GTEST_PROP(VisibilityProperty, BottomRightCausalIsRectangularDecode, ()) {
  const int past = *rc::gen::inRange(0, 9).as("T_past");
  const int tq = *rc::gen::inRange(1, 6).as("Tq");
  Case c;
  c.query_len = tq;
  c.rows = {RowSpec{.documents = {past + tq}}};
  const Scenario s = MakeLayout(c);
  for (int i = 0; i < tq; ++i) {
    RC_ASSERT(s.query_positions[static_cast<size_t>(i)] == past + i);  // p_i = T_past + i
    for (int j = 0; j < s.tk; ++j) RC_ASSERT(s.is_visible(0, i, j) == (j <= past + i));
  }
  RC_ASSERT(s.visible == CausalFlagPattern(MaskConvention::kCausalBottomRight, tq, past + tq));
}

}  // namespace
}  // namespace attncheck::reference
