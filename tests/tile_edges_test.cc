// Tests of the tile edges (Capabilities::tile_sizes, cases/size_tier.h DrawTileEdges):
// a kernel declaring its tiles gets at least a tenth of its cases with Tk and Tq at a
// multiple of a tile or one off, where tail-tile bugs live; a kernel declaring none
// draws exactly what it drew before; the process protocol carries the key, and so
// does the plugin ABI from 2.3 (a 2.2 table loads with none).
#include <gtest/gtest.h>

#include <set>

#include "adapters/process/process_adapter.h"
#include "adapters/registry.h"
#include "attncheck/adapter.h"
#include "cases/error.h"
#include "cases/decode.h"
#include "cases/law_needs.h"
#include "cases/random_source.h"
#include "tests/example_plugins.h"

namespace attncheck {
namespace {

bool AtEdge(int length, const std::vector<int>& tiles) {
  for (int t : tiles)
    if ((length + 1) % t <= 2 && length + 1 >= t) return true;  // m·t − 1, m·t, m·t + 1 with m ≥ 1
  return false;
}

bool BothAtEdges(const Case& c, const std::vector<int>& tiles) {
  return AtEdge(c.key_len(), tiles) && AtEdge(c.query_len, tiles);
}

double EdgeShare(const Capabilities& caps, const std::vector<int>& tiles, uint64_t seed, int n,
                 const LawNeeds& needs = {}) {
  int at = 0;
  for (int i = 0; i < n; ++i) {
    RandomSource src(seed, static_cast<uint64_t>(i));
    at += BothAtEdges(Decode(src, caps, needs), tiles);
  }
  return static_cast<double>(at) / n;
}

Capabilities Wide(std::vector<int> tiles) {
  Capabilities caps;
  caps.max_tokens = 120;
  caps.tile_sizes = std::move(tiles);
  return caps;
}

TEST(TileEdges, AtLeastATenthOfTheCasesAtTheDeclaredTiles) {
  const std::vector<int> tiles = {37};
  const double declared = EdgeShare(Wide(tiles), tiles, 3, 4000);
  const double undeclared = EdgeShare(Wide({}), tiles, 3, 4000);
  EXPECT_GE(declared, 0.10);
  // what chance alone gives (shows the share is the declaration's doing)
  EXPECT_LE(undeclared, 0.05);
  EXPECT_GE(declared - undeclared, kTileEdgePercent / 100.0 - 0.03);
  // the law's needs keep their say (packed documents: a longer minimum length)
  LawNeeds packed;
  packed.packed_documents = true;
  EXPECT_GE(EdgeShare(Wide(tiles), tiles, 4, 2000, packed), 0.10);
}

TEST(TileEdges, EveryEdgeWithinTheLimitsIsDrawnAndCasesStayValid) {
  const Capabilities caps = Wide({16, 64});
  std::set<int> keys;
  for (int i = 0; i < 3000; ++i) {
    RandomSource src(5, static_cast<uint64_t>(i));
    const Case c = Decode(src, caps);
    ASSERT_EQ(Validate(c).value_or("ok"), "ok") << ToLine(c);
    ASSERT_LE(c.key_len(), caps.max_tokens) << ToLine(c);
    if (AtEdge(c.key_len(), caps.tile_sizes)) keys.insert(c.key_len());
  }
  for (int edge : {15, 16, 17, 31, 32, 33, 63, 64, 65, 111, 112, 113})
    EXPECT_TRUE(keys.count(edge)) << "Tk " << edge << " never drawn";
}

TEST(TileEdges, NothingDrawnWithoutTilesAndAnExhaustedSourceStaysOff) {
  // a kernel declaring no tiles consumes no draw of the rule: its cases stay what they were
  struct Recording {
    RandomSource src;
    bool tile_draw = false;
    int64_t Int(int64_t lo, int64_t hi, std::string_view name) {
      tile_draw = tile_draw || name.starts_with("tile_edge");
      return src.Int(lo, hi, name);
    }
    bool Bool(std::string_view name) { return src.Bool(name); }
  };
  for (int i = 0; i < 300; ++i) {
    Recording plain{RandomSource(9, static_cast<uint64_t>(i))};
    Decode(plain, Capabilities{});
    ASSERT_FALSE(plain.tile_draw) << "case " << i;
  }
  struct MinSource {
    int64_t Int(int64_t lo, int64_t /*hi*/, std::string_view /*name*/) { return lo; }
    bool Bool(std::string_view /*name*/) { return false; }
  } min_source;
  const Case c = Decode(min_source, Wide({37}));
  EXPECT_FALSE(AtEdge(c.key_len(), {37})) << ToLine(c);
  // a tile longer than every length the kernel takes: no edge fits, nothing changes
  Capabilities narrow = Wide({500});
  EXPECT_EQ(EdgeShare(narrow, {500}, 6, 500), 0.0);
}

TEST(TileEdges, TiledDeclaresItsBlocksAndTheProtocolCarriesThem) {
  for (const char* name : {"tiled-f32", "tiled-f16", "tiled-bf16"}) {
    const Capabilities caps = MakeAdapter(name)->capabilities();
    EXPECT_EQ(caps.tile_sizes, (std::vector<int>{16, 64})) << name;
    EXPECT_GE(EdgeShare(caps, caps.tile_sizes, 7, 2000), 0.10) << name;
  }
  Capabilities caps;
  caps.tile_sizes = {32, 128};
  EXPECT_EQ(process::CapabilitiesFromJson(process::CapabilitiesToJson(caps)).tile_sizes, caps.tile_sizes);
  nlohmann::json bad = process::CapabilitiesToJson(caps);
  bad["tile_sizes"] = {16, 0};
  try {
    process::CapabilitiesFromJson(bad);
    ADD_FAILURE() << "a tile of 0 was accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("capabilities.tile_sizes"), std::string::npos) << e.what();
  }
}

// ABI 2.3: a plugin's tile_sizes reach its Capabilities and the draw; a table built
// against the 2.2 header (its sizeof ends where tile_sizes begins, tail padding and
// all) loads with none; a negative tile is refused on load, the field named.
TEST(TileEdges, PluginTablesDeclareTilesFromAbi23) {
  const Capabilities tiled = MakeAdapter(test::PluginName("example_plugin_tiles"))->capabilities();
  EXPECT_EQ(tiled.tile_sizes, (std::vector<int>{16}));
  EXPECT_GE(EdgeShare(tiled, tiled.tile_sizes, 7, 2000), 0.10);
  EXPECT_TRUE(MakeAdapter(test::PluginName("example_plugin"))->capabilities().tile_sizes.empty());

  const test::TableVersion v2_2 = test::ExampleTableVersion("example_plugin_abi_v2_2");
  EXPECT_EQ(v2_2.abi_version, 2u);
  EXPECT_GE(v2_2.struct_size, ATTNCHECK_ADAPTER_V2_2_SIZE);
  EXPECT_LT(v2_2.struct_size, ATTNCHECK_ADAPTER_V2_3_SIZE);
  const Capabilities old = MakeAdapter(test::PluginName("example_plugin_abi_v2_2"))->capabilities();
  EXPECT_TRUE(old.tile_sizes.empty());
  EXPECT_TRUE(old.backward_saved);  // the rest of the 2.2 table is read as before

  try {
    MakeAdapter(test::PluginName("example_plugin_bad_tile_sizes"));
    ADD_FAILURE() << "a negative tile was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.field(), "tile_sizes");
    EXPECT_EQ(e.reason(), "-4 is outside 1 to 65536");
  }
}

}  // namespace
}  // namespace attncheck
