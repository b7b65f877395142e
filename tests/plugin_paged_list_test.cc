// The paged example plugins as `attncheck list --adapter plugin:… --json` shows them
// (examples/plugin, EXAMPLE_PAGED): the table's paged form and page size 16 arrive,
// and the padded-batch variant keeps its padded forms next to them; ABI 2.4's
// further page sizes reach the draw, a 2.3 table keeps its one, a repeated one is refused.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <map>
#include <string>

#include "adapters/registry.h"
#include "attncheck/adapter.h"
#include "cases/decode.h"
#include "cases/error.h"
#include "cases/random_source.h"
#include "properties/laws.h"
#include "tests/cli_support.h"
#include "tests/example_plugins.h"

namespace attncheck {
namespace {

class PluginPagedList : public test::ScratchDirTest {
 protected:
  nlohmann::json Capabilities(const std::string& variant) {
    const test::CliRun run = Run("list --adapter " + test::Quoted(test::PluginName(variant)) + " --json");
    EXPECT_EQ(run.code, 0) << run.err;
    return nlohmann::json::parse(run.out)["capabilities"];
  }
};

bool Has(const nlohmann::json& forms, const char* form) {
  for (const nlohmann::json& f : forms)
    if (f == form) return true;
  return false;
}

TEST_F(PluginPagedList, ShowsThePagedFormAndPageSize) {
  for (const char* variant : {"example_plugin_paged", "example_plugin_varlen_paged"}) {
    const nlohmann::json caps = Capabilities(variant);
    EXPECT_TRUE(Has(caps["descriptor_forms"], "paged")) << variant << caps.dump();
    EXPECT_EQ(caps["page_size"], 16) << variant;
  }
  EXPECT_TRUE(Has(Capabilities("example_plugin_paged")["descriptor_forms"], "seqused_k"));
  EXPECT_TRUE(Has(Capabilities("example_plugin_varlen_paged")["descriptor_forms"], "varlen"));
  // the plugin without EXAMPLE_PAGED declares no page size
  const nlohmann::json varlen = Capabilities("example_plugin_varlen");
  EXPECT_FALSE(Has(varlen["descriptor_forms"], "paged"));
  EXPECT_EQ(varlen["page_size"], 0);
}

// ABI 2.4: more_page_sizes {1, 7} arrive beside page_size 16, and reference-agreement's
// stream draws the paged cases at each of the three; the same kernel built against the
// 2.3 header (its table ends at tile_sizes) is paged at 16 alone; a table listing
// page_size again is refused on load, the field named.
TEST_F(PluginPagedList, GatesEveryPageSizeFromAbi24) {
  for (const char* variant : {"example_plugin_paged", "example_plugin_varlen_paged"}) {
    EXPECT_EQ(Capabilities(variant)["more_page_sizes"], nlohmann::json({1, 7})) << variant;
  }
  const attncheck::Capabilities paged = MakeAdapter(test::PluginName("example_plugin_paged"))->capabilities();
  const LawNeeds& needs = FindLaw("reference-agreement")->needs;
  const attncheck::Capabilities narrowed = *NarrowToNeeds(paged, needs, nullptr);
  std::map<int, int> drawn;  // page size → paged cases
  int cases = 0;
  for (uint64_t i = 0; i < 600; ++i) {
    RandomSource source(5, i);
    const Case c = Decode(source, narrowed, needs);
    if (c.page_size > 0) ++drawn[c.page_size], ++cases;
  }
  ASSERT_GT(cases, 100);
  for (int size : {16, 1, 7}) EXPECT_GE(drawn[size] * 10, cases) << "page size " << size << " of " << cases;
  EXPECT_EQ(drawn.size(), 3u);

  const test::TableVersion v2_3 = test::ExampleTableVersion("example_plugin_abi_v2_3");
  EXPECT_GE(v2_3.struct_size, ATTNCHECK_ADAPTER_V2_3_SIZE);
  EXPECT_LT(v2_3.struct_size, ATTNCHECK_ADAPTER_V2_4_SIZE);
  const nlohmann::json old = Capabilities("example_plugin_abi_v2_3");
  EXPECT_TRUE(Has(old["descriptor_forms"], "paged")) << old.dump();
  EXPECT_EQ(old["page_size"], 16);
  EXPECT_TRUE(!old.contains("more_page_sizes") || old["more_page_sizes"].empty()) << old.dump();

  try {
    MakeAdapter(test::PluginName("example_plugin_bad_more_page_sizes"));
    ADD_FAILURE() << "a repeated page size was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.field(), "more_page_sizes");
    EXPECT_EQ(e.reason(), "16 repeats page_size");
  }
}

}  // namespace
}  // namespace attncheck
