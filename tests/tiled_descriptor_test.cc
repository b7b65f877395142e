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

namespace attncheck {
namespace {

std::vector<float> ToFloat(const TensorD& t) { return std::vector<float>(t.data.begin(), t.data.end()); }

std::vector<float> RunTiled(Adapter& adapter, const reference::Scenario& s, const MaskArgs& mask) {
  const Case& c = s.c;
  const std::vector<float> q = ToFloat(s.q), k = ToFloat(s.k), v = ToFloat(s.v);
  std::vector<float> out(static_cast<size_t>(s.batch) * c.q_heads * s.tq * c.value_dim, 123.0f);
  AttentionArgs a;
  a.c = &c;
  a.batch = s.batch;
  a.q_heads = c.q_heads;
  a.kv_heads = c.kv_heads;
  a.tq = s.tq;
  a.tk = s.tk;
  a.head_dim = c.head_dim;
  a.value_dim = c.value_dim;
  a.q = q;
  a.k = k;
  a.v = v;
  a.query_positions = s.query_positions;
  a.key_positions = s.key_positions;
  a.mask = mask;
  a.scale = c.effective_scale();
  a.out = out;
  adapter.attention(a);
  return out;
}

TEST(TiledDescriptor, SameOutputAsTheBoolMask) {
  for (const char* name : {"tiled-f32", "tiled-bf16"}) {
    const std::unique_ptr<Adapter> adapter = MakeAdapter(name);
    const DescriptorForms forms = reference::FlashAttentionForms(false);
    int compared = 0;
    for (uint64_t i = 0; i < 600; ++i) {
      RandomSource source(31, i);
      Case c = Decode(source, adapter->capabilities());
      if (!reference::Describe(c, forms, nullptr)) continue;
      const reference::Scenario s = reference::MakeScenario(c);
      const VisibilityDescriptor d = *reference::Describe(c, forms, nullptr);
      MaskArgs descriptor, dense;
      descriptor.convention = MaskConvention::kDescriptor;
      descriptor.descriptor = &d;
      dense.convention = MaskConvention::kBoolVisible;
      dense.boolean = s.visible;
      const std::vector<float> by_descriptor = RunTiled(*adapter, s, descriptor),
                               by_mask = RunTiled(*adapter, s, dense);
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
