// The tiled kernel given a visibility descriptor instead of a mask (adapters/
// tiled): it computes the visibility and the key blocks it may skip from the
// descriptor itself, as FlashAttention does, and must give bitwise the output it
// gives with the equivalent bool mask on every case the descriptor expresses.
#include <gtest/gtest.h>

#include <cstring>

#include "adapters/registry.h"
#include "cases/decode.h"
#include "cases/random_source.h"
#include "reference/descriptor.h"
#include "reference/scenario.h"
#include "tests/direct_attention.h"

namespace attncheck {
namespace {

TEST(TiledDescriptor, SameOutputAsTheBoolMask) {
  for (const char* name : {"tiled-f32", "tiled-bf16"}) {
    const std::unique_ptr<Adapter> adapter = MakeAdapter(name);
    const DescriptorForms forms = reference::FlashAttentionForms(false);
    int compared = 0;
    for (uint64_t i = 0; i < 600; ++i) {
      RandomSource source(31, i);
      Case c = Decode(source, adapter->capabilities());
      // A direct call hands the tensors as they are: the padded layout, never keys
      // moved to slot 0 (the harness's packing does that; descriptor_layout_test).
      if (c.layout == DescriptorLayout::kRagged) c.layout = DescriptorLayout::kPadded;
      if (!reference::Describe(c, forms, nullptr)) continue;
      const reference::Scenario s = reference::MakeScenario(c);
      const VisibilityDescriptor d = *reference::Describe(c, forms, nullptr);
      MaskArgs descriptor, dense;
      descriptor.convention = MaskConvention::kDescriptor;
      descriptor.descriptor = &d;
      dense.convention = MaskConvention::kBoolVisible;
      dense.boolean = s.visible;
      const std::vector<float> by_descriptor = test::DirectAttention(*adapter, s, descriptor),
                               by_mask = test::DirectAttention(*adapter, s, dense);
      ASSERT_EQ(std::memcmp(by_descriptor.data(), by_mask.data(), by_mask.size() * sizeof(float)), 0)
          << name << ": " << ToLine(c);
      ++compared;
    }
    std::printf("%s: %d cases compared\n", name, compared);
    EXPECT_GT(compared, 150) << name;
  }
}

}  // namespace
}  // namespace attncheck
