// The paged example plugins as `attncheck list --adapter plugin:… --json` shows them
// (examples/plugin, EXAMPLE_PAGED): the table's paged form and page size 16 arrive,
// and the padded-batch variant keeps its padded forms next to them.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>

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

}  // namespace
}  // namespace attncheck
