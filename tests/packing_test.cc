// Varlen and paged descriptor calls (adapters/packing.h): packing then unpacking
// gives back every produced row and the declared value in pad rows; pages hold
// every key once and garbage (NaN) elsewhere, which a correct kernel never reads;
// the tiled varlen and paged kernels agree with the oracle on packed documents.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "adapters/harness.h"
#include "adapters/mutants/mutants.h"
#include "adapters/packing.h"
#include "adapters/registry.h"
#include "cases/decode.h"
#include "cases/random_source.h"
#include "reference/descriptor.h"
#include "reference/scenario.h"
#include "tests/law_run.h"

namespace attncheck {
namespace {

constexpr int kPageSize = 4;

TensorF AsFloat(const TensorD& t) { return t.cast<float>(); }

// Cases of the varlen kernel's stream with more sequences than batch rows.
template <class Fn>
int ForPackedCases(int page_size, Fn fn) {
  const std::unique_ptr<Adapter> adapter = MakeAdapter("tiled-varlen-f32");
  const DescriptorForms forms = reference::FlashAttentionForms(true, page_size);
  int packed = 0;
  for (uint64_t i = 0; i < 300; ++i) {
    RandomSource source(17, i);
    const Case c = Decode(source, adapter->capabilities());
    const std::optional<VisibilityDescriptor> d = reference::Describe(c, forms, nullptr);
    if (!d || d->sequences() <= c.batch()) continue;
    fn(c, *d);
    ++packed;
  }
  return packed;
}

TEST(Packing, RoundTripGivesEveryProducedRowAndThePolicyInPadRows) {
  const int packed = ForPackedCases(kPageSize, [](const Case& c, const VisibilityDescriptor& d) {
    const reference::Scenario s = reference::MakeScenario(c);
    PackedCall call;
    Pack(c, d, AsFloat(s.q), AsFloat(s.k), AsFloat(s.v), s.query_positions, s.key_positions, call);
    ASSERT_EQ(call.batch, 1);
    ASSERT_EQ(call.tq, d.cu_seqlens_q.back());
    ASSERT_EQ(call.tk, d.cu_seqlens_k.back());
    // A kernel that returns its packed q as the output (D = Dv only).
    if (c.head_dim != c.value_dim || c.q_heads != c.kv_heads) return;
    for (MaskedRowPolicy policy : {MaskedRowPolicy::kZeros, MaskedRowPolicy::kNaN}) {
      TensorD out(s.batch, c.q_heads, s.tq, c.value_dim, 7.0);
      std::vector<uint8_t> unproduced;
      Unpack(c, d, call.q.data, policy, AsFloat(s.v), out, unproduced);
      std::vector<uint8_t> produced(static_cast<size_t>(s.batch) * s.tq, 0);
      for (const auto& [b, i] : reference::PackedTokensOf(c).query_of) produced[static_cast<size_t>(b) * s.tq + i] = 1;
      // the pad rows, and only they, are flagged as not the kernel's (none: left empty)
      if (std::find(produced.begin(), produced.end(), 0) == produced.end()) {
        ASSERT_TRUE(unproduced.empty()) << ToLine(c);
      } else {
        ASSERT_EQ(unproduced.size(), produced.size()) << ToLine(c);
        for (size_t r = 0; r < produced.size(); ++r) ASSERT_NE(unproduced[r], produced[r]) << r << ": " << ToLine(c);
      }
      for (int b = 0; b < s.batch; ++b)
        for (int h = 0; h < c.q_heads; ++h)
          for (int i = 0; i < s.tq; ++i)
            for (int e = 0; e < c.value_dim; ++e) {
              const double x = out.at(b, h, i, e);
              if (produced[static_cast<size_t>(b) * s.tq + i]) {
                ASSERT_EQ(x, static_cast<float>(s.q.at(b, h, i, e))) << ToLine(c);
              } else if (policy == MaskedRowPolicy::kZeros) {
                ASSERT_EQ(x, 0.0) << "pad row " << i << " of row " << b << ": " << ToLine(c);
              } else {
                ASSERT_TRUE(std::isnan(x)) << "pad row " << i << " of row " << b << ": " << ToLine(c);
              }
            }
    }
  });
  EXPECT_GT(packed, 30);
}

TEST(Packing, PagesHoldEveryKeyOnceAndGarbageElsewhere) {
  const int packed = ForPackedCases(kPageSize, [](const Case& c, const VisibilityDescriptor& d) {
    const reference::Scenario s = reference::MakeScenario(c);
    PackedCall call;
    Pack(c, d, AsFloat(s.q), AsFloat(s.k), AsFloat(s.v), s.query_positions, s.key_positions, call);
    ASSERT_EQ(call.k.shape, (std::array<int, 4>{d.paged.num_pages, c.kv_heads, kPageSize, c.head_dim}));
    const reference::PackedTokens tokens = reference::PackedTokensOf(c);
    std::vector<uint8_t> used(static_cast<size_t>(d.paged.num_pages) * kPageSize, 0);
    for (int seq = 0; seq < d.sequences(); ++seq)
      for (int j = 0; j < d.cu_seqlens_k[seq + 1] - d.cu_seqlens_k[seq]; ++j) {
        const auto [page, offset] = reference::PagedSlot(d.paged, seq, j);
        const auto [b, slot] = tokens.key_of[static_cast<size_t>(d.cu_seqlens_k[seq] + j)];
        ASSERT_EQ(used[static_cast<size_t>(page) * kPageSize + offset]++, 0) << "a page slot holds two keys";
        for (int h = 0; h < c.kv_heads; ++h)
          for (int e = 0; e < c.head_dim; ++e)
            ASSERT_EQ(call.k.at(page, h, offset, e), static_cast<float>(s.k.at(b, h, slot, e))) << ToLine(c);
      }
    int garbage = 0;
    for (int page = 0; page < d.paged.num_pages; ++page)
      for (int offset = 0; offset < kPageSize; ++offset) {
        if (used[static_cast<size_t>(page) * kPageSize + offset]) continue;
        ++garbage;
        for (int h = 0; h < c.kv_heads; ++h) ASSERT_TRUE(std::isnan(call.v.at(page, h, offset, 0))) << ToLine(c);
      }
    EXPECT_GE(garbage, kPageSize) << "at least the unused page is garbage";
  });
  EXPECT_GT(packed, 30);
}

// Through the harness: the paged kernel's produced rows are finite (a garbage slot
// read would be NaN), and the block-table slip (its twin is the same kernel) changes them.
TEST(Packing, TheCorrectKernelNeverReadsGarbage) {
  const std::unique_ptr<Adapter> slipped = mutants::MakeMutant("mutant:desc-block-table-row0", true);
  const std::unique_ptr<Adapter> twin = mutants::MakeMutant("mutant:desc-block-table-row0", false);
  int compared = 0, differs = 0;
  for (const char* name : {"tiled-paged-bf16", "twin"}) {
    const std::unique_ptr<Adapter> named = std::string(name) == "twin" ? nullptr : MakeAdapter(name);
    Adapter& correct = named ? *named : *twin;
    for (uint64_t i = 0; i < 150; ++i) {
      RandomSource source(23, i);
      const Case c = Decode(source, correct.capabilities());
      const reference::Scenario s = reference::MakeScenario(c);
      if (WhyUnsupported(correct, s, MaskConvention::kDescriptor)) continue;
      const AdapterRun run = RunAttention(correct, s);
      ASSERT_TRUE(run.ok()) << run.fault;
      for (const auto& [b, q] : reference::PackedTokensOf(c).query_of)
        for (int h = 0; h < c.q_heads; ++h)
          for (int e = 0; e < c.value_dim; ++e) ASSERT_TRUE(std::isfinite(run.out.at(b, h, q, e))) << ToLine(c);
      ++compared;
      if (!named) differs += RunAttention(*slipped, s).out != run.out;
    }
  }
  EXPECT_GT(compared, 200);
  EXPECT_GT(differs, 20);
}

TEST(Packing, TiledVarlenAndPagedAgreeWithTheOracle) {
  const Law& law = *FindLaw("reference-agreement");
  for (const char* name : {"tiled-varlen-f32", "tiled-paged-bf16"}) {
    const std::unique_ptr<Adapter> adapter = MakeAdapter(name);
    const test::LawRunCounts counts = test::ExpectLawHolds(law, *adapter, name, adapter->capabilities(), 5, 150);
    EXPECT_GT(counts.passed, 100) << name;
  }
}

}  // namespace
}  // namespace attncheck
