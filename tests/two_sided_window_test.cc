// Two-sided windows (Case::window_right, FlashAttention's window_size=(W − 1, R) with
// causal off): the reference's meaning, the descriptor's, the case file and the
// draws at the edges (R = 1, 2, T − 1, T, T + 1), and the one-line errors.
#include <gtest/gtest.h>

#include <map>

#include "adapters/registry.h"
#include "cases/case_json.h"
#include "cases/decode.h"
#include "cases/random_source.h"
#include "reference/descriptor.h"
#include "reference/visibility.h"

namespace attncheck {
namespace {

Case OneRow(int tokens, int window, int right) {
  Case c;
  c.query_len = tokens;
  c.rows = {RowSpec{.documents = {tokens}}};
  c.visibility = VisibilityKind::kSlidingWindow;
  c.window = window;
  c.window_right = right;
  return c;
}

// One row of 6 tokens, W = 2, R = 1: query q sees q − 1, q and q + 1, cut at the ends.
TEST(TwoSidedWindow, SeesTheKeysOnBothSides) {
  const Case c = OneRow(6, 2, 1);
  ASSERT_EQ(Validate(c), std::nullopt);
  EXPECT_EQ(reference::Visibility(c), (std::vector<uint8_t>{1, 1, 0, 0, 0, 0,  //
                                                            1, 1, 1, 0, 0, 0,  //
                                                            0, 1, 1, 1, 0, 0,  //
                                                            0, 0, 1, 1, 1, 0,  //
                                                            0, 0, 0, 1, 1, 1,  //
                                                            0, 0, 0, 0, 1, 1}));
  // R = 0 is the causal window it always was.
  const std::vector<uint8_t> causal = reference::Visibility(OneRow(6, 2, 0));
  for (int i = 0; i < 6; ++i)
    for (int j = i + 1; j < 6; ++j) EXPECT_EQ(causal[static_cast<size_t>(i) * 6 + j], 0);
}

// The descriptor is FlashAttention's (W − 1, R) without a causal flag, and means the same.
TEST(TwoSidedWindow, DescriptorIsLeftAndRightWithoutCausal) {
  DescriptorForms forms;
  forms.causal_bottom_right = forms.window = true;
  Case c = OneRow(7, 3, 2);
  c.query_len = 4;  // a KV cache of 3: the diagonal is bottom-right
  const std::optional<VisibilityDescriptor> d = reference::Describe(c, forms, nullptr);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->causal, CausalAlignment::kNone);
  EXPECT_EQ(d->window, (Window{2, 2}));
  EXPECT_EQ(reference::DescriptorVisibilityOnCase(*d, c), reference::Visibility(c));
  // The causal window keeps its causal flag.
  const std::optional<VisibilityDescriptor> causal = reference::Describe(OneRow(7, 3, 0), forms, nullptr);
  ASSERT_TRUE(causal);
  EXPECT_EQ(causal->causal, CausalAlignment::kBottomRight);
  EXPECT_EQ(causal->window, (Window{2, 0}));
}

// The case file carries R only when it is set, so every earlier case keeps its hash.
TEST(TwoSidedWindow, CaseFileRoundTrip) {
  const Case causal = OneRow(5, 2, 0);
  EXPECT_FALSE(ToJson(causal).contains("window_right"));
  const Case two_sided = OneRow(5, 2, 3);
  EXPECT_EQ(ToJson(two_sided)["window_right"], 3);
  EXPECT_EQ(FromJson(ToJson(two_sided), "x.json"), two_sided);
  EXPECT_NE(Hash(two_sided), Hash(causal));
  EXPECT_NE(ToLine(two_sided).find(",W=2,R=3,"), std::string::npos) << ToLine(two_sided);
}

TEST(TwoSidedWindow, OneLineErrors) {
  Case c = OneRow(5, 2, -1);
  EXPECT_EQ(Validate(c), "window_right: must be >= 0, got -1");
  c = OneRow(5, 2, 2);
  c.visibility = VisibilityKind::kCausal;
  EXPECT_EQ(Validate(c), "window_right: 2 needs sliding-window visibility, got causal");
}

// The generator draws R at the descriptor's edges, for dense and descriptor kernels alike.
TEST(TwoSidedWindow, DrawnAtTheEdges) {
  for (const char* name : {"reference", "tiled-f32"}) {
    const Capabilities caps = MakeAdapter(name)->capabilities();
    std::map<std::string, int> edges;
    int windows = 0, two_sided = 0, described = 0;
    for (uint64_t i = 0; i < 4000; ++i) {
      RandomSource source(41, i);
      const Case c = Decode(source, caps);
      if (c.visibility != VisibilityKind::kSlidingWindow) continue;
      ++windows;
      if (c.window_right == 0) continue;
      ++two_sided;
      const int tk = c.key_len(), r = c.window_right;
      ++edges[r == 1 ? "1" : r == 2 ? "2" : r == tk - 1 ? "T-1" : r == tk ? "T" : r == tk + 1 ? "T+1" : "other"];
      if (c.mask == MaskConvention::kDescriptor) {
        ++described;
        std::string why;
        const std::optional<VisibilityDescriptor> d = reference::Describe(c, caps.descriptor_forms, &why);
        ASSERT_TRUE(d) << why << ": " << ToLine(c);
        ASSERT_EQ(reference::DescriptorVisibilityOnCase(*d, c), reference::Visibility(c)) << ToLine(c);
      }
    }
    EXPECT_GT(two_sided, windows / 5) << name;
    EXPECT_LT(two_sided, windows / 2) << name;
    for (const char* edge : {"1", "2", "T-1", "T", "T+1", "other"}) EXPECT_GT(edges[edge], 5) << name << " R=" << edge;
    if (std::string(name) == "tiled-f32") {
      EXPECT_GT(described, 20);  // 36 at this seed
    }
  }
}

}  // namespace
}  // namespace attncheck
