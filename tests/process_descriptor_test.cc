// The visibility descriptor on the process protocol (adapters/process/
// descriptor_json.h): every descriptor reference::Describe builds — padded batch,
// varlen, paged, ALiBi — survives the JSON round trip, and malformed ones are
// protocol errors.
#include <gtest/gtest.h>

#include "adapters/process/descriptor_json.h"
#include "adapters/process/protocol.h"
#include "cases/decode.h"
#include "cases/random_source.h"
#include "reference/descriptor.h"

namespace attncheck {
namespace {

TEST(ProcessDescriptor, RoundTripsEveryDescribedCase) {
  Capabilities caps;
  caps.masks = {MaskConvention::kDescriptor};
  caps.encodings = {EncodingKind::kNone, EncodingKind::kAlibi};
  caps.softcap = true;
  int round_trips = 0, varlen = 0, paged = 0;
  for (const DescriptorForms& forms : {reference::FlashAttentionForms(false), reference::FlashAttentionForms(true, 4)}) {
    for (uint64_t i = 0; i < 300; ++i) {
      RandomSource source(47, i);
      const Case c = Decode(source, caps);
      const std::optional<VisibilityDescriptor> d = reference::Describe(c, forms, nullptr);
      if (!d) continue;
      const nlohmann::json j = process::DescriptorToJson(*d);
      EXPECT_EQ(process::DescriptorFromJson(nlohmann::json::parse(j.dump()), d->batch, d->tq, d->tk), *d) << j.dump();
      ++round_trips;
      varlen += d->varlen();
      paged += d->paged.page_size > 0;
    }
  }
  EXPECT_GT(round_trips, 200);
  EXPECT_GT(varlen, 50);
  EXPECT_GT(paged, 50);
}

TEST(ProcessDescriptor, MalformedIsAProtocolError) {
  const nlohmann::json good = {{"causal", 2}, {"window_left", 3}, {"window_right", 0}, {"seqused_k", {5, 6}}};
  EXPECT_EQ(process::DescriptorFromJson(good, 2, 4, 8).seqused_k, (std::vector<int32_t>{5, 6}));
  for (const nlohmann::json& bad : {nlohmann::json::array(), nlohmann::json{{"causal", 3}},
                                    nlohmann::json{{"window_left", "3"}}, nlohmann::json{{"seqused_k", {5}}},
                                    nlohmann::json{{"leftpad_k", {1, "x"}}}}) {
    EXPECT_THROW(process::DescriptorFromJson(bad, 2, 4, 8), process::ProtocolError) << bad.dump();
  }
}

}  // namespace
}  // namespace attncheck
