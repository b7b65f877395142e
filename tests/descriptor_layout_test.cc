// Declared descriptor layouts and page sizes (Case::layout, Case::page_size;
// reference::Describe narrows the declared forms to them): a kernel declaring
// several is handed each in turn; the ragged layout (a padded batch whose rows'
// keys start at slot 0, seqused_k and no leftpad_k, every query real) describes
// exactly the reference visibility, and its packing moves the keys and back.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "adapters/packing.h"
#include "adapters/registry.h"
#include "cases/decode.h"
#include "cases/random_source.h"
#include "reference/descriptor.h"
#include "reference/scenario.h"
#include "reference/visibility.h"

namespace attncheck {
namespace {

// The tiled kernel's capabilities, given only the descriptor in `forms`.
Capabilities DescriptorCaps(const DescriptorForms& forms) {
  Capabilities caps = MakeAdapter("tiled-f32")->capabilities();
  caps.masks = {MaskConvention::kDescriptor};
  caps.descriptor_forms = forms;
  caps.queries_beyond_keys = true;
  return caps;
}

DescriptorForms PaddedWithLeftpad() { return reference::FlashAttentionForms(false); }

DescriptorForms SeqlensOnly() {  // ONNX Runtime's GroupQueryAttention: seqlens_k, no left padding
  DescriptorForms f = reference::FlashAttentionForms(false);
  f.leftpad_k = false;
  return f;
}

TEST(DescriptorLayout, DeclaredLayoutsFollowTheForms) {
  using L = DescriptorLayout;
  EXPECT_EQ(DeclaredLayouts(PaddedWithLeftpad()), (std::vector<L>{L::kPadded, L::kRagged}));
  EXPECT_EQ(DeclaredLayouts(SeqlensOnly()), (std::vector<L>{L::kPadded}));
  EXPECT_EQ(DeclaredLayouts(reference::FlashAttentionForms(true)), (std::vector<L>{L::kVarlen}));
  DescriptorForms both = reference::FlashAttentionForms(true);
  both.seqused_q = both.seqused_k = both.leftpad_k = true;
  EXPECT_EQ(DeclaredLayouts(both), (std::vector<L>{L::kVarlen, L::kPadded, L::kRagged}));
  DescriptorForms paged = reference::FlashAttentionForms(true, 16);
  paged.more_page_sizes = {1, 7};
  EXPECT_EQ(DeclaredPageSizes(paged), (std::vector<int>{16, 1, 7}));
  EXPECT_TRUE(DeclaredPageSizes(reference::FlashAttentionForms(true)).empty());
}

// A kernel declaring the padded batch with leftpad_k is handed both layouts; its
// ragged cases have every query real and their keys from slot 0, and describe
// exactly the reference visibility.
TEST(DescriptorLayout, RaggedCasesAreDrawnAndDescribeTheReference) {
  const Capabilities caps = DescriptorCaps(PaddedWithLeftpad());
  std::map<DescriptorLayout, int> drawn;
  int ragged_left_padded = 0, described = 0;
  for (uint64_t i = 0; i < 2000; ++i) {
    RandomSource source(41, i);
    const Case c = Decode(source, caps);
    ++drawn[c.layout];
    std::string why;
    const std::optional<VisibilityDescriptor> d = reference::Describe(c, caps.descriptor_forms, &why);
    ASSERT_TRUE(d.has_value()) << why << "\n  " << ToLine(c);
    ++described;
    ASSERT_EQ(reference::DescriptorVisibilityOnCase(*d, c), reference::Visibility(c)) << ToLine(c);
    if (c.layout != DescriptorLayout::kRagged) {
      ASSERT_FALSE(reference::KeysCompacted(*d, c)) << ToLine(c);
      continue;
    }
    ASSERT_TRUE(d->leftpad_k.empty()) << ToLine(c);
    if (c.query_len <= c.key_len()) {
      ASSERT_TRUE(d->seqused_q.empty()) << "a pad query: " << ToLine(c);
    }
    for (int b = 0; b < c.batch(); ++b) {
      ASSERT_EQ(c.rows[b].right_pad, 0) << ToLine(c);
      if (!d->seqused_k.empty()) {
        ASSERT_EQ(d->seqused_k[b], c.rows[b].real_tokens()) << ToLine(c);
      }
    }
    if (reference::KeysCompacted(*d, c)) ++ragged_left_padded;
  }
  EXPECT_EQ(drawn.count(DescriptorLayout::kAuto), 0u);
  EXPECT_GT(drawn[DescriptorLayout::kRagged], 700);
  EXPECT_GT(drawn[DescriptorLayout::kPadded], 700);
  EXPECT_GT(ragged_left_padded, 300);
  std::printf("padded %d, ragged %d (%d with keys moved to slot 0), %d described\n", drawn[DescriptorLayout::kPadded],
              drawn[DescriptorLayout::kRagged], ragged_left_padded, described);
}

// Without leftpad_k, a left-padded row was a refusal; now it is handed ragged.
TEST(DescriptorLayout, ASeqlensKernelTakesLeftPaddedRowsRagged) {
  const Capabilities caps = DescriptorCaps(SeqlensOnly());
  int left_padded = 0;
  for (uint64_t i = 0; i < 1000; ++i) {
    RandomSource source(43, i);
    const Case c = Decode(source, caps);
    EXPECT_EQ(c.layout, DescriptorLayout::kAuto);
    const bool has_left_pad = std::any_of(c.rows.begin(), c.rows.end(), [](const RowSpec& r) { return r.left_pad > 0; });
    // A row of pads alone has no key to start at slot 0: still a refusal without leftpad_k.
    const bool pads_alone = std::any_of(c.rows.begin(), c.rows.end(),
                                        [](const RowSpec& r) { return r.left_pad > 0 && r.real_tokens() == 0; });
    std::string why;
    const std::optional<VisibilityDescriptor> d = reference::Describe(c, caps.descriptor_forms, &why);
    if (pads_alone) {
      EXPECT_FALSE(d.has_value()) << ToLine(c);
      EXPECT_NE(why.find("padding alone"), std::string::npos) << why;
      continue;
    }
    ASSERT_TRUE(d.has_value()) << why << "\n  " << ToLine(c);
    ASSERT_EQ(reference::KeysCompacted(*d, c), has_left_pad) << ToLine(c);
    ASSERT_EQ(reference::DescriptorVisibilityOnCase(*d, c), reference::Visibility(c)) << ToLine(c);
    left_padded += has_left_pad;
    // Asked for the slots as they are, a left pad needs leftpad_k.
    Case padded = c;
    padded.layout = DescriptorLayout::kPadded;
    EXPECT_EQ(reference::Describe(padded, caps.descriptor_forms, &why).has_value(), !has_left_pad) << ToLine(c);
  }
  EXPECT_GT(left_padded, 200);
}

TEST(DescriptorLayout, ALayoutOrPageSizeNotDeclaredIsARefusal) {
  Case c;
  c.mask = MaskConvention::kDescriptor;
  c.rows = {RowSpec{.documents = {4}}};
  c.query_len = 4;
  std::string why;
  c.layout = DescriptorLayout::kVarlen;
  EXPECT_FALSE(reference::Describe(c, PaddedWithLeftpad(), &why));
  EXPECT_NE(why.find("varlen layout"), std::string::npos) << why;
  c.layout = DescriptorLayout::kAuto;
  c.page_size = 7;
  DescriptorForms paged = reference::FlashAttentionForms(true, 16);
  EXPECT_FALSE(reference::Describe(c, paged, &why));
  EXPECT_NE(why.find("pages of 7 keys"), std::string::npos) << why;
  paged.more_page_sizes = {1, 7};
  const std::optional<VisibilityDescriptor> d = reference::Describe(c, paged, &why);
  ASSERT_TRUE(d) << why;
  EXPECT_EQ(d->paged.page_size, 7);
}

// A paged kernel declaring several page sizes is drawn at each, and each case's
// descriptor pages at the size drawn.
TEST(DescriptorLayout, EveryDeclaredPageSizeIsDrawn) {
  DescriptorForms forms = reference::FlashAttentionForms(true, 16);
  forms.more_page_sizes = {1, 7, 64};
  const Capabilities caps = DescriptorCaps(forms);
  std::map<int, int> sizes;
  for (uint64_t i = 0; i < 800; ++i) {
    RandomSource source(47, i);
    const Case c = Decode(source, caps);
    ++sizes[c.page_size];
    const std::optional<VisibilityDescriptor> d = reference::Describe(c, forms, nullptr);
    if (!d) continue;
    EXPECT_EQ(d->paged.page_size, c.page_size) << ToLine(c);
  }
  for (int size : {16, 1, 7, 64}) EXPECT_GT(sizes[size], 120) << "page size " << size;
  EXPECT_EQ(sizes.count(0), 0u);
}

// Packing a ragged call moves each row's keys, values and key positions down by its
// left pad (its pad slots after them); UncompactKeyRows puts key rows back.
TEST(DescriptorLayout, RaggedPackingMovesKeysAndBack) {
  const Capabilities caps = DescriptorCaps(SeqlensOnly());
  int checked = 0;
  for (uint64_t i = 0; i < 400 && checked < 60; ++i) {
    RandomSource source(53, i);
    const Case c = Decode(source, caps);
    const std::optional<VisibilityDescriptor> d = reference::Describe(c, caps.descriptor_forms, nullptr);
    if (!d || !reference::KeysCompacted(*d, c)) continue;
    ASSERT_TRUE(NeedsPacking(*d, c));
    const reference::Scenario s = reference::MakeScenario(c);
    const TensorF q = s.q.cast<float>(), k = s.k.cast<float>(), v = s.v.cast<float>();
    PackedCall call;
    Pack(c, *d, q, k, v, s.query_positions, s.key_positions, call);
    ASSERT_EQ(call.k.shape, k.shape);
    ASSERT_EQ(call.q.data, q.data);  // the query side is untouched
    for (int b = 0; b < c.batch(); ++b) {
      const int pad = c.rows[b].left_pad, tk = c.key_len();
      for (int j = 0; j < tk; ++j) {
        const int slot = (j + pad) % tk;
        ASSERT_EQ(call.key_positions[static_cast<size_t>(b) * tk + j], s.key_positions[static_cast<size_t>(b) * tk + slot]);
        for (int h = 0; h < c.kv_heads; ++h)
          for (int e = 0; e < c.head_dim; ++e) ASSERT_EQ(call.k.at(b, h, j, e), k.at(b, h, slot, e)) << ToLine(c);
      }
    }
    TensorD back(k.shape[0], k.shape[1], k.shape[2], k.shape[3]);
    UncompactKeyRows(c, *d, call.k.data, back);
    for (size_t e = 0; e < back.data.size(); ++e) ASSERT_EQ(static_cast<float>(back.data[e]), k.data[e]);
    ++checked;
  }
  EXPECT_GE(checked, 60);
}

}  // namespace
}  // namespace attncheck
