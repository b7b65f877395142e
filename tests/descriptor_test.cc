// The visibility descriptor (cases/visibility_descriptor.h, reference/descriptor.h):
// every case a kernel's forms can express describes exactly the reference's
// visibility, the window conventions convert both ways, and the boundaries the
// descriptor bug classes live at (W keys, Tq > Tk, slopes for odd head counts,
// page edges) have the meaning FlashAttention and ggml give them.
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <map>
#include <set>
#include <string>

#include "adapters/registry.h"
#include "cases/decode.h"
#include "cases/random_source.h"
#include "cases/text.h"
#include "reference/alibi.h"
#include "reference/descriptor.h"
#include "reference/visibility.h"

namespace attncheck {
namespace {

DescriptorForms FlashLikePadded() {
  DescriptorForms f;
  f.causal_bottom_right = f.window = f.seqused_q = f.seqused_k = f.leftpad_k = true;
  f.prefix = f.chunk = f.alibi = f.softcap = true;
  return f;
}

DescriptorForms FlashLikeVarlen(int page_size) {
  DescriptorForms f = FlashLikePadded();
  f.varlen = true;
  f.paged = page_size > 0;
  f.page_size = page_size;
  return f;
}

DescriptorForms TopLeftOnly() {
  DescriptorForms f;
  f.causal_top_left = true;
  return f;
}

// Over thousands of drawn cases: whatever Describe accepts, its descriptor's
// visibility equals the reference's, cell for cell; whatever it refuses has a reason.
TEST(Descriptor, DescribesExactlyTheReferenceVisibility) {
  const Capabilities reference = MakeAdapter("reference")->capabilities();
  const Capabilities tiled = MakeAdapter("tiled-f32")->capabilities();
  const std::map<std::string, DescriptorForms> forms = {
      {"padded", FlashLikePadded()}, {"varlen", FlashLikeVarlen(0)}, {"varlen-paged-3", FlashLikeVarlen(3)},
      {"top-left", TopLeftOnly()}};
  for (const auto& [name, form] : forms) {
    int described = 0, total = 0;
    std::map<std::string, int> refusals;
    for (const Capabilities* caps : {&reference, &tiled}) {
      for (uint64_t i = 0; i < 1500; ++i) {
        RandomSource source(23, i);
        const Case c = Decode(source, *caps);
        ++total;
        std::string why;
        const std::optional<VisibilityDescriptor> d = reference::Describe(c, form, &why);
        if (!d) {
          ASSERT_FALSE(why.empty()) << ToLine(c);
          std::string reason = why.substr(0, why.find(':'));
          for (char& ch : reason) ch = std::isdigit(static_cast<unsigned char>(ch)) ? '#' : ch;
          ++refusals[reason];
          continue;
        }
        ++described;
        ASSERT_EQ(reference::DescriptorVisibilityOnCase(*d, c), reference::Visibility(c)) << name << ": " << ToLine(c);
      }
    }
    std::string top;
    for (const auto& [reason, count] : refusals) top += fmt::format("\n  {} × {}", count, reason);
    std::printf("%s: %d of %d cases described; refusals:%s\n", name.c_str(), described, total, top.c_str());
    // A form that describes almost nothing would make this test vacuous.
    EXPECT_GT(described, total / (name == "top-left" ? 20 : 3)) << name;
  }
}

// A decode step's case sees what the whole case sees, restricted to the step's
// queries (a suffix of the keys so far) and those keys.
TEST(Descriptor, StepCaseIsTheRestriction) {
  const Capabilities caps = MakeAdapter("reference")->capabilities();
  int steps = 0;
  for (uint64_t n = 0; n < 400; ++n) {
    RandomSource source(29, n);
    const Case c = Decode(source, caps);
    const int tq = c.query_len, tk = c.key_len(), past = tk - tq;
    const std::vector<uint8_t> whole = reference::Visibility(c);
    for (int keys = past + 1; keys <= tk; keys += 1 + static_cast<int>(n % 3)) {
      for (int queries : {1, keys - past}) {
        const int i0 = keys - past - queries;  // the step's first query among the case's
        const Case step = reference::StepCase(c, keys, queries);
        ASSERT_EQ(step.key_len(), keys) << ToLine(c);
        const std::vector<uint8_t> part = reference::Visibility(step);
        for (int b = 0; b < c.batch(); ++b)
          for (int i = 0; i < queries; ++i)
            for (int j = 0; j < keys; ++j)
              ASSERT_EQ(part[(static_cast<size_t>(b) * queries + i) * keys + j],
                        whole[(static_cast<size_t>(b) * tq + i0 + i) * tk + j])
                  << ToLine(c) << " keys " << keys << " queries " << queries;
        ++steps;
      }
    }
  }
  EXPECT_GT(steps, 1000);
}

// Decode draws a descriptor kernel's cases inside its forms: every tiled case
// whose convention is the descriptor can be described (one document per row, no
// query row in the left padding, windows and chunks of at least 1).
TEST(Descriptor, DecodeDrawsInsideTheForms) {
  for (const char* name : {"tiled-f32", "tiled-f16"}) {
    const Capabilities caps = MakeAdapter(name)->capabilities();
    int drawn = 0;
    for (uint64_t i = 0; i < 3000; ++i) {
      RandomSource source(37, i);
      const Case c = Decode(source, caps);
      if (c.mask != MaskConvention::kDescriptor) continue;
      ++drawn;
      std::string why;
      ASSERT_TRUE(reference::Describe(c, caps.descriptor_forms, &why)) << why << ": " << ToLine(c);
    }
    EXPECT_GT(drawn, 3000 / 10) << name;
  }
}

TEST(Descriptor, WindowConventions) {
  EXPECT_EQ(WindowFromKeysIncludingSelf(1), (Window{0, 0}));
  EXPECT_EQ(WindowFromKeysIncludingSelf(4096), (Window{4095, 0}));
  EXPECT_EQ(KeysIncludingSelf(Window{4095, 0}), 4096);
  EXPECT_EQ(KeysIncludingSelf(Window{3, 2}), std::nullopt);
  EXPECT_EQ(KeysIncludingSelf(Window{-1, 0}), std::nullopt);
  // PyTorch's cuDNN attention: set_diagonal_band_left_bound(window_size_left + 1).
  EXPECT_EQ(CudnnLeftBound(Window{7, 0}), 8);
  EXPECT_EQ(CudnnLeftBound(Window{-1, 0}), std::nullopt);
  EXPECT_EQ(WindowFromCudnnLeftBound(8, 0), (Window{7, 0}));
}

// A window of W keys including self admits exactly W keys on every row far enough
// in, and the classic defect, W passed as (W, 0), admits W + 1.
TEST(Descriptor, AWindowOfWAdmitsWKeys) {
  for (int w : {1, 2, 5, 16}) {
    VisibilityDescriptor d;
    d.batch = 1;
    d.tq = d.tk = 40;
    d.causal = CausalAlignment::kBottomRight;
    d.window = WindowFromKeysIncludingSelf(w);
    VisibilityDescriptor wrong = d;
    wrong.window = {w, 0};
    for (int i = w; i < d.tq; ++i) {
      int seen = 0, seen_wrong = 0;
      for (int j = 0; j < d.tk; ++j) {
        seen += reference::DescriptorSees(d, 0, i, j);
        seen_wrong += reference::DescriptorSees(wrong, 0, i, j);
      }
      EXPECT_EQ(seen, w) << "W=" << w << " i=" << i;
      EXPECT_EQ(seen_wrong, w + 1);
    }
  }
}

// Tq > Tk, bottom-right (FlashAttention's documented zero rows): query i's diagonal
// is i − (Tq − Tk), so the first Tq − Tk rows see nothing; top-left sees key 0 on row 0.
TEST(Descriptor, MoreQueriesThanKeysBottomRight) {
  VisibilityDescriptor d;
  d.batch = 1;
  d.tq = 5;
  d.tk = 2;
  d.causal = CausalAlignment::kBottomRight;
  const std::vector<uint8_t> bottom_right = reference::DescriptorVisibility(d);
  EXPECT_EQ(bottom_right, (std::vector<uint8_t>{0, 0, 0, 0, 0, 0, 1, 0, 1, 1}));
  d.causal = CausalAlignment::kTopLeft;
  EXPECT_EQ(reference::DescriptorVisibility(d), (std::vector<uint8_t>{1, 0, 1, 1, 1, 1, 1, 1, 1, 1}));
}

// ggml's slopes from max_bias 8 are the paper's for every head count; the
// power-of-two formula used for every count is not (the shipped defect).
TEST(Descriptor, AlibiSlopesFromMaxBias) {
  for (int heads = 1; heads <= 64; ++heads) {
    const std::vector<double> ggml = reference::AlibiSlopesFromMaxBias(8.0, heads);
    const std::vector<double> paper = reference::AlibiSlopes(heads);
    ASSERT_EQ(ggml.size(), paper.size());
    double differs = 0.0;
    for (int h = 0; h < heads; ++h) {
      EXPECT_NEAR(ggml[h], paper[h], 1e-13 * paper[h]) << heads << " heads, head " << h;
      differs = std::max(differs, std::abs(std::pow(2.0, -8.0 * (h + 1) / heads) - paper[h]));
    }
    if ((heads & (heads - 1)) == 0) {
      EXPECT_LT(differs, 1e-15) << heads;
    } else {
      EXPECT_GT(differs, 1e-3) << heads;
    }
  }
}

// Pages: every key slot of every sequence has its own (page, offset); the garbage
// page is no sequence's; pages are shuffled.
TEST(Descriptor, PagedLayoutIsAPermutation) {
  Case c;
  c.query_len = 1;
  c.rows = {RowSpec{0, 0, {5, 0, 1}}, RowSpec{0, 0, {3, 3}}};
  c.visibility = VisibilityKind::kBidirectional;
  bool shuffled = false;
  for (int page_size : {1, 2, 3, 5, 6, 64}) {
    for (uint64_t seed = 0; seed < 8; ++seed) {
      c.seed = seed;
      std::string why;
      const std::optional<VisibilityDescriptor> d = reference::Describe(c, FlashLikeVarlen(page_size), &why);
      ASSERT_TRUE(d) << why;
      std::set<std::pair<int, int>> seen;
      std::set<int> pages;
      for (int s = 0; s < d->sequences(); ++s) {
        const int keys = d->cu_seqlens_k[s + 1] - d->cu_seqlens_k[s];
        for (int t = 0; t < keys; ++t) {
          const auto slot = reference::PagedSlot(d->paged, s, t);
          EXPECT_TRUE(seen.insert(slot).second) << "page size " << page_size;
          EXPECT_LT(slot.first, d->paged.num_pages);
          pages.insert(slot.first);
          if (t / page_size != slot.first) shuffled = true;
        }
      }
      EXPECT_EQ(static_cast<int>(pages.size()), d->paged.num_pages - 1) << "one garbage page, the rest used";
    }
  }
  EXPECT_TRUE(shuffled);
}

TEST(Descriptor, RefusalsNameWhatIsMissing) {
  Case packed;
  packed.query_len = 2;
  packed.rows = {RowSpec{0, 0, {2, 3}}};
  std::string why;
  EXPECT_FALSE(reference::Describe(packed, FlashLikePadded(), &why));
  EXPECT_NE(why.find("cu_seqlens"), std::string::npos) << why;
  EXPECT_TRUE(reference::Describe(packed, FlashLikeVarlen(0), &why)) << why;

  Case window = packed;
  window.rows = {RowSpec{0, 0, {5}}};
  window.visibility = VisibilityKind::kSlidingWindow;
  window.window = 0;
  EXPECT_FALSE(reference::Describe(window, FlashLikePadded(), &why));
  EXPECT_NE(why.find("window of 0 keys"), std::string::npos) << why;

  Case cached = window;
  cached.visibility = VisibilityKind::kCausal;
  EXPECT_FALSE(reference::Describe(cached, TopLeftOnly(), &why));
  EXPECT_NE(why.find("bottom-right"), std::string::npos) << why;
}

// The text `show` prints names every part that is set.
TEST(Descriptor, TextNamesEveryPart) {
  Case c;
  c.q_heads = 3;
  c.query_len = 4;
  c.rows = {RowSpec{2, 0, {4}}};
  c.visibility = VisibilityKind::kSlidingWindow;
  c.window = 2;
  c.encoding.kind = EncodingKind::kAlibi;
  c.softcap = 30.0;
  std::string why;
  const std::optional<VisibilityDescriptor> d = reference::Describe(c, reference::FlashAttentionForms(false), &why);
  ASSERT_TRUE(d) << why;
  const std::string text = reference::DescriptorText(*d);
  for (const char* part : {"causal: bottom-right\n", "window (left, right): (1, 0)\n", "leftpad_k: 2\n",
                           "alibi slopes: 0.0625 0.00390625 0.25\n", "softcap: 30\n"}) {
    EXPECT_NE(text.find(part), std::string::npos) << part << " in\n" << text;
  }
  EXPECT_EQ(text.find("seqused_k"), std::string::npos) << "every key slot is used: " << text;
}

}  // namespace
}  // namespace attncheck
