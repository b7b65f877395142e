// Tests of the `plugin:` adapter with the example plugin (examples/plugin): the
// table's capabilities arrive as declared, f16 and bf16 cases cross the ABI in
// their own dtype and still agree with the oracle, a plugin's error return
// becomes an exception carrying its last_error() text, and a defect variant
// fails the same check (so these checks can fail).
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "adapters/harness.h"
#include "adapters/registry.h"
#include "cases/error.h"
#include "properties/laws.h"
#include "tests/example_plugins.h"


namespace attncheck {
namespace {

using test::PluginName;

// Causal GQA case with RoPE owned by the plugin, one padded row, Tq < Tk.
Case RopeCase(Dtype dtype, RopeLayout layout) {
  Case c;
  c.rows = {RowSpec{.left_pad = 2, .documents = {10}}, RowSpec{.documents = {12}}};
  c.query_len = 5;
  c.q_heads = 4;
  c.kv_heads = 2;
  c.head_dim = 16;
  c.value_dim = 8;
  c.encoding.kind = EncodingKind::kRope;
  c.encoding.rope.layout = layout;
  c.encoding.rope.rotary_dim = 12;
  c.encoding.rope.scaling = RopeScaling::kLinear;
  c.encoding.rope.factor = 2.0;
  c.dtype = dtype;
  c.seed = 11;
  return c;
}

TEST(PluginAdapter, CapabilitiesAreTheTables) {
  const std::unique_ptr<Adapter> plugin = MakeAdapter(PluginName("example_plugin"));
  EXPECT_EQ(plugin->name(), PluginName("example_plugin"));
  EXPECT_NE(plugin->description().find("example-c"), std::string::npos);
  const Capabilities caps = plugin->capabilities();
  EXPECT_EQ(caps.dtypes, (std::vector<Dtype>{Dtype::kF32, Dtype::kF16, Dtype::kBf16}));
  ASSERT_EQ(caps.masks.size(), kAllMaskConventions.size() - 1);  // every dense mask and flag; no descriptor
  EXPECT_EQ(caps.masks.front(), MaskConvention::kAdditiveNegInf);  // preferred first
  EXPECT_EQ(caps.masked_rows, MaskedRowPolicy::kZeros);
  EXPECT_TRUE(caps.owns_rope);
  EXPECT_FALSE(caps.owns_bias);
  EXPECT_TRUE(caps.has_rope_stage);
  EXPECT_TRUE(caps.has_session);
  EXPECT_EQ(caps.rope_scalings, (std::vector<RopeScaling>{RopeScaling::kNone, RopeScaling::kLinear}));
  EXPECT_EQ(caps.rope_layouts, (std::vector<RopeLayout>{RopeLayout::kInterleaved, RopeLayout::kHalfSplit}));
}

class PluginDtypes : public testing::TestWithParam<Dtype> {};

// Every accepted convention that can express the case, both layouts.
TEST_P(PluginDtypes, AgreesWithTheOracleInItsDtype) {
  const std::unique_ptr<Adapter> plugin = MakeAdapter(PluginName("example_plugin"));
  int checked = 0;
  for (RopeLayout layout : kAllRopeLayouts) {
    for (MaskConvention mask : plugin->capabilities().masks) {
      Case c = RopeCase(GetParam(), layout);
      c.mask = mask;
      if (WhyUnsupported(*plugin, c)) continue;
      const Verdict verdict = check_reference_agreement(*plugin, c, Options{});
      if (verdict.skipped()) continue;
      ++checked;
      EXPECT_TRUE(verdict.passed()) << Name(layout) << " " << Name(mask) << ": " << verdict.message;
      const Verdict session = check_decode_consistency(*plugin, c, Options{});
      EXPECT_FALSE(IsFinding(session.outcome))
          << Name(layout) << " " << Name(mask) << ": " << session.message;
    }
  }
  EXPECT_GE(checked, 12);  // four additive and two bool conventions in two layouts
}

INSTANTIATE_TEST_SUITE_P(Plugin, PluginDtypes, testing::Values(Dtype::kF32, Dtype::kF16, Dtype::kBf16),
                         [](const testing::TestParamInfo<Dtype>& info) { return std::string(Name(info.param)); });

// The negative control: the off-by-one copy fails the same check on a causal flag.
TEST(PluginAdapter, DefectVariantFailsReferenceAgreement) {
  const std::unique_ptr<Adapter> defect = MakeAdapter(PluginName("example_plugin_off_by_one"));
  Case c;
  c.rows = {RowSpec{.documents = {9}}};
  c.query_len = 9;
  c.mask = MaskConvention::kCausalTopLeft;
  c.seed = 5;
  const Verdict verdict = check_reference_agreement(*defect, c, Options{});
  EXPECT_TRUE(verdict.failed()) << verdict.message;
}

TEST(PluginAdapter, ErrorReturnBecomesAnExceptionWithLastError) {
  const std::unique_ptr<Adapter> plugin = MakeAdapter(PluginName("example_plugin"));
  Case c;
  c.rows = {RowSpec{.documents = {1}}};
  c.head_dim = 2;
  c.value_dim = 2;
  c.encoding.kind = EncodingKind::kRope;
  c.encoding.rope.scaling = RopeScaling::kYarn;  // not implemented by the example
  const std::vector<float> q = {1, 2}, k = {3, 4}, v = {5, 6}, additive = {0};
  const std::vector<int> positions = {0};
  std::vector<float> out(2);
  AttentionArgs args;
  args.spec = SpecOf(c);
  args.batch = args.q_heads = args.kv_heads = args.tq = args.tk = 1;
  args.head_dim = args.value_dim = 2;
  args.q = q;
  args.k = k;
  args.v = v;
  args.query_positions = positions;
  args.key_positions = positions;
  args.mask.convention = MaskConvention::kAdditiveNegInf;
  args.mask.additive = additive;
  args.apply_positional = true;
  args.scale = 1.0;
  args.current_length = 1;
  args.out = out;
  try {
    plugin->attention(args);
    FAIL() << "the plugin's error return did not throw";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("example-c"), std::string::npos) << what;
    EXPECT_NE(what.find("RoPE scaling 4 not implemented"), std::string::npos) << what;
  }
}

TEST(PluginAdapter, MalformedTablesAreInputErrors) {
  for (const char* variant : {"example_plugin_bad_abi", "example_plugin_no_attention", "example_plugin_no_entry",
                              "example_plugin_bad_caps", "no_such_plugin"}) {
    EXPECT_THROW(MakeAdapter(PluginName(variant)), InputError) << variant;
  }
}

}  // namespace
}  // namespace attncheck
