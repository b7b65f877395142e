// MakeScenario(c, &donor) copies the data of tokens the donor already holds; it
// must build exactly the tensors MakeScenario(c) generates, for derived cases that
// share some tokens with the donor (longer documents, moved positions, more pads)
// and for cases whose data differ (another seed: the donor is ignored).
#include <algorithm>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "adapters/registry.h"
#include "cases/decode.h"
#include "cases/random_source.h"
#include "reference/scenario.h"

namespace attncheck {
namespace {

using reference::MakeScenario;
using reference::Scenario;

void ExpectSameData(const Scenario& got, const Scenario& want, const std::string& what) {
  EXPECT_EQ(got.q, want.q) << what;
  EXPECT_EQ(got.k, want.k) << what;
  EXPECT_EQ(got.v, want.v) << what;
}

TEST(ScenarioDonor, CopiedDataEqualsGeneratedData) {
  const std::unique_ptr<Adapter> adapter = MakeAdapter("reference");
  const Capabilities caps = adapter->capabilities();
  int longer = 0, padded = 0;
  for (uint64_t index = 0; index < 300; ++index) {
    RandomSource source(12345, index);
    Case c = Decode(source, caps);
    c.query_len = c.key_len();  // as decode-consistency builds its donor
    const Scenario donor = MakeScenario(c);
    const std::string line = ToLine(c);

    // The history check's longer call: one more token, positions moved far out.
    Case long_case = c;
    bool has_documents = true;
    for (RowSpec& row : long_case.rows) {
      if (row.documents.empty()) {
        has_documents = false;
        break;
      }
      row.documents.back() += 1;
      row.position_offset += 5000;
    }
    if (has_documents) {
      ++longer;
      ExpectSameData(MakeScenario(long_case, &donor), MakeScenario(long_case), "longer: " + line);
    }

    // Two more left pads in row 0 and a shorter query block.
    Case pads = c;
    pads.rows[0].left_pad += 2;
    for (size_t b = 1; b < pads.rows.size(); ++b) pads.rows[b].right_pad += 2;
    pads.query_len = std::max(0, c.query_len / 2);
    ++padded;
    ExpectSameData(MakeScenario(pads, &donor), MakeScenario(pads), "padded: " + line);

    // Another seed: every element differs, the donor must be ignored.
    Case reseeded = c;
    reseeded.seed += 1;
    ExpectSameData(MakeScenario(reseeded, &donor), MakeScenario(reseeded), "reseeded: " + line);
  }
  EXPECT_GT(longer, 100);
  EXPECT_GT(padded, 100);
}

}  // namespace
}  // namespace attncheck
