// Tests of plugin ABI 2 with the example plugin's variants (examples/plugin): an
// ABI 1 build (tests/fixtures/abi_v1) still loads as ABI 1; the descriptor mode's
// table arrives as Capabilities and its kernel, given the descriptor, gives bitwise
// the output the dense kernel gives with the equivalent bool mask; declared head
// dims are the only ones drawn; a refusal is a skip with the plugin's reason; ABI 2.5's
// contract promises arrive, and a 2.4 table makes none.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstddef>

#include <algorithm>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "adapters/registry.h"
#include "attncheck/adapter.h"
#include "cases/decode.h"
#include "cases/error.h"
#include "cases/random_source.h"
#include "properties/laws.h"
#include "reference/descriptor.h"
#include "reference/scenario.h"
#include "tests/cli_support.h"
#include "tests/direct_attention.h"
#include "tests/example_plugins.h"

namespace attncheck {
namespace {

using test::PluginName;

TEST(PluginAbi2, AnAbi1BuildLoadsAsAbi1) {
  // Built against tests/fixtures/abi_v1: its table says ABI 1 and ends before the ABI 2 fields.
  const test::TableVersion version = test::ExampleTableVersion("example_plugin_abi_v1");
  EXPECT_EQ(version.abi_version, 1u);
  EXPECT_LE(version.struct_size, offsetof(attncheck_adapter_v1, descriptor_forms) + sizeof(uint32_t));
  const std::unique_ptr<Adapter> v1 = MakeAdapter(PluginName("example_plugin_abi_v1"));
  const Capabilities caps = v1->capabilities();
  EXPECT_EQ(caps.masks.size(), 8u);  // the eight ABI 1 conventions, no descriptor
  EXPECT_EQ(std::count(caps.masks.begin(), caps.masks.end(), MaskConvention::kDescriptor), 0);
  EXPECT_FALSE(caps.descriptor_forms.causal_bottom_right);
  EXPECT_EQ(caps.head_dim_multiple, 1);
  EXPECT_TRUE(caps.head_dims.empty());
  EXPECT_TRUE(caps.has_session);
}

TEST(PluginAbi2, DescriptorModeTableArrivesAsCapabilities) {
  const Capabilities caps = MakeAdapter(PluginName("example_plugin_descriptor"))->capabilities();
  EXPECT_EQ(caps.masks, std::vector<MaskConvention>{MaskConvention::kDescriptor});
  const DescriptorForms& f = caps.descriptor_forms;
  EXPECT_TRUE(f.causal_bottom_right && f.window && f.seqused_q && f.seqused_k && f.leftpad_k && f.prefix && f.chunk &&
              f.softcap);
  EXPECT_FALSE(f.causal_top_left || f.varlen || f.paged);
  EXPECT_TRUE(f.alibi && f.alibi_max_bias && caps.owns_bias);  // ALiBi from the descriptor, the kernel's own
  EXPECT_EQ(caps.head_dim_multiple, 8);
  EXPECT_FALSE(caps.value_dim_differs);
}

// The descriptor kernel computes the visibility itself: bitwise the dense kernel's
// output with the bool mask of the same visibility, on every case the forms express.
TEST(PluginAbi2, DescriptorModeMatchesTheBoolMask) {
  const std::unique_ptr<Adapter> described = MakeAdapter(PluginName("example_plugin_descriptor"));
  const std::unique_ptr<Adapter> dense = MakeAdapter(PluginName("example_plugin"));
  const DescriptorForms forms = described->capabilities().descriptor_forms;
  int compared = 0, differs_top_left = 0;
  for (uint64_t i = 0; i < 400; ++i) {
    RandomSource source(41, i);
    Case c = Decode(source, described->capabilities());
    // A direct call hands the tensors as they are: the padded layout, never keys
    // moved to slot 0 (the harness's packing does that; descriptor_layout_test).
    if (c.layout == DescriptorLayout::kRagged) c.layout = DescriptorLayout::kPadded;
    // ALiBi reaches the two kernels differently (the descriptor's slopes, a folded
    // additive mask): no bitwise comparison of visibility there.
    if (c.encoding.kind == EncodingKind::kAlibi) continue;
    const std::optional<VisibilityDescriptor> d = reference::Describe(c, forms, nullptr);
    if (!d) continue;
    const reference::Scenario s = reference::MakeScenario(c);
    MaskArgs by_descriptor, by_mask;
    by_descriptor.convention = MaskConvention::kDescriptor;
    by_descriptor.descriptor = &*d;
    by_mask.convention = MaskConvention::kBoolVisible;
    by_mask.boolean = s.visible;
    const std::vector<float> got = test::DirectAttention(*described, s, by_descriptor), want = test::DirectAttention(*dense, s, by_mask);
    ASSERT_EQ(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)), 0) << ToLine(c);
    ++compared;
    // The negative control: the wrong alignment changes some Tq < Tk causal output.
    if (d->causal == CausalAlignment::kBottomRight && s.tq < s.tk) {
      VisibilityDescriptor top_left = *d;
      top_left.causal = CausalAlignment::kTopLeft;
      by_descriptor.descriptor = &top_left;
      const std::vector<float> wrong = test::DirectAttention(*described, s, by_descriptor);
      differs_top_left += std::memcmp(wrong.data(), want.data(), want.size() * sizeof(float)) != 0;
    }
  }
  EXPECT_GT(compared, 100);
  EXPECT_GT(differs_top_left, 10);
}

TEST(PluginAbi2, OnlyDeclaredHeadDimsAreDrawn) {
  const std::unique_ptr<Adapter> plugin = MakeAdapter(PluginName("example_plugin_head_dim_8"));
  const Capabilities caps = plugin->capabilities();
  EXPECT_EQ(caps.head_dim_multiple, 8);
  std::set<int> drawn;
  for (uint64_t i = 0; i < 300; ++i) {
    RandomSource source(43, i);
    const Case c = Decode(source, caps);
    EXPECT_EQ(c.head_dim % 8, 0) << ToLine(c);
    drawn.insert(c.head_dim);
  }
  EXPECT_EQ(drawn, (std::set<int>{8, 16, 32}));  // every allowed dim up to max_head_dim 32
  Capabilities listed = caps;
  listed.head_dims = {24, 40, 12};
  listed.max_head_dim = 64;
  for (uint64_t i = 0; i < 100; ++i) {
    RandomSource source(44, i);
    const int d = Decode(source, listed).head_dim;
    EXPECT_TRUE(d == 24 || d == 40) << d;  // 12 is not a multiple of 8
  }
  Case c;
  c.rows = {RowSpec{.documents = {4}}};
  c.head_dim = c.value_dim = 12;
  const std::optional<std::string> why = plugin->unsupported(c);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("head dim 12"), std::string::npos) << *why;
}

TEST(PluginAbi2, RefusalIsASkipWithTheReason) {
  const std::unique_ptr<Adapter> plugin = MakeAdapter(PluginName("example_plugin_refuse_long"));
  Case c;
  c.rows = {RowSpec{.documents = {20}}};
  c.query_len = 4;
  c.seed = 3;
  const Verdict refused = check_reference_agreement(*plugin, c, Options{});
  EXPECT_TRUE(refused.skipped()) << refused.message;
  EXPECT_EQ(refused.message.rfind("refused: ", 0), 0u) << refused.message;
  EXPECT_NE(refused.message.find("20 keys: this kernel takes at most 16"), std::string::npos) << refused.message;
  c.rows = {RowSpec{.documents = {12}}};
  const Verdict taken = check_reference_agreement(*plugin, c, Options{});
  EXPECT_TRUE(taken.passed()) << taken.message;
}

// Through the program, in a child process (isolated:): refusals cross the process
// boundary as skips naming the reason; the run exits 0.
class PluginAbi2Cli : public test::ScratchDirTest {};

TEST_F(PluginAbi2Cli, RefusalsAreSkipsInTheSummary) {
  const std::string adapter = "isolated:" + PluginName("example_plugin_refuse_long");
  const test::CliRun run = test::RunAttncheck(
      dir_, dir_, "gate --adapter " + test::Quoted(adapter) + " --law reference-agreement --cases 40 --seed 2 --json s.json --quiet");
  ASSERT_EQ(run.code, 0) << run.err;
  const nlohmann::json summary = nlohmann::json::parse(test::ReadText(dir_ / "s.json"));
  const nlohmann::json& result = summary["results"][0];
  EXPECT_EQ(result["errors"], 0);
  EXPECT_GT(result["passed"].get<int>(), 0);
  int refused = 0;
  for (const auto& [reason, count] : result["skip_reasons"].items()) {
    if (reason.rfind("refused: ", 0) == 0 && reason.find("this kernel takes at most 16") != std::string::npos) {
      refused += count.get<int>();
    }
  }
  EXPECT_GT(refused, 0) << result.dump();
}

TEST_F(PluginAbi2Cli, ListJsonShowsTheAbi2Fields) {
  const test::CliRun run = test::RunAttncheck(
      dir_, dir_, "list --adapter " + test::Quoted(PluginName("example_plugin_descriptor")) + " --json");
  ASSERT_EQ(run.code, 0) << run.err;
  const nlohmann::json caps = nlohmann::json::parse(run.out)["capabilities"];
  EXPECT_EQ(caps["masks"], nlohmann::json({"descriptor"}));
  EXPECT_EQ(caps["descriptor_forms"], nlohmann::json({"causal_bottom_right", "window", "seqused_q", "seqused_k",
                                                      "leftpad_k", "prefix", "chunk", "alibi", "alibi_max_bias",
                                                      "softcap"}));
  EXPECT_EQ(caps["owns_bias"], true);
  EXPECT_EQ(caps["head_dim_multiple"], 8);
  EXPECT_EQ(caps["head_dims"], nlohmann::json::array());
  EXPECT_EQ(caps["page_size"], 0);
}

// A kernel declaring D % 8 == 0 (and failing any other D) gates cleanly, with no
// more skips than the unconstrained kernel.
TEST_F(PluginAbi2Cli, HeadDimConstraintGatesCleanly) {
  auto skipped = [this](const std::string& variant, int* errors) {
    const test::CliRun run = test::RunAttncheck(
        dir_, dir_, "gate --adapter " + test::Quoted(PluginName(variant)) + " --cases 30 --seed 6 --json s.json --quiet");
    EXPECT_EQ(run.code, 0) << variant << ": " << run.err;
    const nlohmann::json summary = nlohmann::json::parse(test::ReadText(dir_ / "s.json"));
    int total = 0;
    *errors = 0;
    for (const nlohmann::json& r : summary["results"]) {
      total += r["skipped"].get<int>();
      *errors += r["errors"].get<int>();
    }
    return total;
  };
  int errors = 0, base_errors = 0;
  const int constrained = skipped("example_plugin_head_dim_8", &errors);
  const int base = skipped("example_plugin", &base_errors);
  EXPECT_EQ(errors, 0);
  EXPECT_LE(constrained, base + base / 10 + 5) << "constrained " << constrained << ", unconstrained " << base;
}

// ABI 2.5's contract promises arrive as Capabilities; a plugin built against the 2.4
// header keeps loading and promises neither (the safe reading); a promise that is not 0
// or 1 is refused with the field's name.
TEST(PluginAbi2, PromisesOfAbi25ArriveAndA24TableMakesNone) {
  const test::TableVersion now = test::ExampleTableVersion("example_plugin");
  EXPECT_GE(now.struct_size, ATTNCHECK_ADAPTER_V2_5_SIZE);
  const Capabilities promised = MakeAdapter(PluginName("example_plugin"))->capabilities();
  EXPECT_TRUE(promised.session_rope_as_call);
  EXPECT_TRUE(promised.backward_deterministic);

  const test::TableVersion v2_4 = test::ExampleTableVersion("example_plugin_abi_v2_4");
  EXPECT_GE(v2_4.struct_size, ATTNCHECK_ADAPTER_V2_4_SIZE);
  EXPECT_LT(v2_4.struct_size, ATTNCHECK_ADAPTER_V2_5_SIZE);
  const Capabilities old = MakeAdapter(PluginName("example_plugin_abi_v2_4"))->capabilities();
  EXPECT_TRUE(old.has_session);
  EXPECT_FALSE(old.session_rope_as_call);
  EXPECT_TRUE(old.backward_deterministic);
  EXPECT_EQ(old.descriptor_forms.more_page_sizes, std::vector<int>({1, 7}));

  try {
    MakeAdapter(PluginName("example_plugin_bad_promise"));
    ADD_FAILURE() << "a promise of 2 was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.field(), "session_rope_as_call");
    EXPECT_EQ(e.reason(), "2 is not 0 or 1");
  }
}

}  // namespace
}  // namespace attncheck
