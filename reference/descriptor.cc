// Case → visibility descriptor, and the descriptor's dense meaning (descriptor.h).
// Sources: FlashAttention 2 csrc/flash_attn/src/block_info.h (leftpad_k, seqused_k
// counting the left pad), mask.h (window offsets from the bottom-right diagonal);
// ggml.c ggml_soft_max_ext (ALiBi slopes from max_bias).
#include "reference/descriptor.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <numeric>

#include "cases/capabilities.h"
#include "cases/random_source.h"
#include "reference/alibi.h"
#include "reference/layout.h"

namespace attncheck::reference {
namespace {

int NonEmptyDocuments(const RowSpec& row) {
  return static_cast<int>(std::count_if(row.documents.begin(), row.documents.end(), [](int n) { return n > 0; }));
}

// Floor division (a diagonal may be negative when Tq > Tk).
int FloorDiv(int a, int b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

// Sequence s's (real queries, keys, left pad).
struct SequenceShape {
  int nq = 0, nk = 0, left_pad = 0;
};

SequenceShape ShapeOf(const VisibilityDescriptor& d, int s) {
  if (d.varlen()) {
    return {d.cu_seqlens_q[s + 1] - d.cu_seqlens_q[s], d.cu_seqlens_k[s + 1] - d.cu_seqlens_k[s], 0};
  }
  const int left_pad = d.leftpad_k.empty() ? 0 : d.leftpad_k[s];
  const int used_k = d.seqused_k.empty() ? d.tk : d.seqused_k[s];
  return {d.seqused_q.empty() ? d.tq : d.seqused_q[s], used_k - left_pad, left_pad};
}

// Per-sequence (queries, keys) of c's documents in Describe's order.
std::vector<std::pair<int, int>> VarlenSequences(const Case& c) {
  std::vector<std::pair<int, int>> sequences;
  const int tk = c.key_len(), first_query_slot = tk - c.query_len;
  for (const RowSpec& row : c.rows) {
    int start = row.left_pad;
    const int leading_document = LeadingDocument(row);
    for (int d = 0; d < static_cast<int>(row.documents.size()); ++d) {
      const int length = row.documents[static_cast<size_t>(d)];
      int queries = std::max(0, start + length - std::max(start, first_query_slot));
      if (d == leading_document && first_query_slot < 0) queries -= first_query_slot;  // leading queries (Tq > Tk)
      sequences.emplace_back(queries, length);
      start += length;
    }
  }
  return sequences;
}

void Shuffle(std::vector<int32_t>& v, uint64_t seed) {
  for (size_t i = v.size(); i > 1; --i) {
    const uint64_t r = SplitMix64(seed + i * 0x9e3779b97f4a7c15ull);
    std::swap(v[i - 1], v[r % i]);
  }
}

PagedKv Paginate(const std::vector<int>& keys_per_sequence, int page_size, uint64_t seed) {
  PagedKv paged;
  paged.page_size = page_size;
  int used = 0;
  for (int n : keys_per_sequence) {
    const int pages = (n + page_size - 1) / page_size;
    paged.max_blocks = std::max(paged.max_blocks, pages);
    used += pages;
  }
  paged.max_blocks = std::max(paged.max_blocks, 1);
  paged.num_pages = used + 1;  // the last physical id after shuffling is the garbage page
  std::vector<int32_t> physical(static_cast<size_t>(paged.num_pages));
  std::iota(physical.begin(), physical.end(), 0);
  Shuffle(physical, seed);
  const int32_t garbage = physical.back();
  paged.block_table.assign(keys_per_sequence.size() * paged.max_blocks, garbage);
  int next = 0;
  for (size_t s = 0; s < keys_per_sequence.size(); ++s) {
    const int pages = (keys_per_sequence[s] + page_size - 1) / page_size;
    for (int p = 0; p < pages; ++p) paged.block_table[s * paged.max_blocks + p] = physical[next++];
  }
  return paged;
}

// The declared forms narrowed to the layout and page size case c asks for
// (Case::layout, Case::page_size); false with the reason when it asks for one the
// kernel does not take.
bool NarrowToCase(const Case& c, DescriptorForms& forms, std::string* why) {
  const auto refuse = [&](std::string reason) {
    if (why != nullptr) *why = std::move(reason);
    return false;
  };
  if (c.layout != DescriptorLayout::kAuto) {
    const std::vector<DescriptorLayout> layouts = DeclaredLayouts(forms);
    if (std::find(layouts.begin(), layouts.end(), c.layout) == layouts.end()) {
      return refuse(fmt::format("the case asks for the {} layout, which the kernel's forms do not take", Name(c.layout)));
    }
    switch (c.layout) {
      case DescriptorLayout::kAuto: break;
      case DescriptorLayout::kPadded: forms.varlen = false; break;
      case DescriptorLayout::kRagged: forms.varlen = forms.leftpad_k = false; break;
      case DescriptorLayout::kVarlen: forms.seqused_q = forms.seqused_k = forms.leftpad_k = false; break;
    }
  }
  if (c.page_size != 0) {
    const std::vector<int> sizes = DeclaredPageSizes(forms);
    if (std::find(sizes.begin(), sizes.end(), c.page_size) == sizes.end()) {
      return refuse(fmt::format("the case asks for pages of {} keys, which the kernel does not take", c.page_size));
    }
    forms.page_size = c.page_size;
  }
  return true;
}

}  // namespace

std::optional<VisibilityDescriptor> Describe(const Case& c, const DescriptorForms& declared, std::string* why) {
  auto cannot = [why](std::string reason) -> std::optional<VisibilityDescriptor> {
    if (why != nullptr) *why = std::move(reason);
    return std::nullopt;
  };
  DescriptorForms forms = declared;
  if (!NarrowToCase(c, forms, why)) return std::nullopt;
  VisibilityDescriptor d;
  d.batch = c.batch();
  d.tq = c.query_len;
  d.tk = c.key_len();

  switch (c.visibility) {
    case VisibilityKind::kCausal:
    case VisibilityKind::kBidirectional:
      break;
    case VisibilityKind::kPrefixLm:
      if (!forms.prefix) return cannot("prefix-LM visibility needs the prefix form");
      break;
    case VisibilityKind::kSlidingWindow:
      if (!forms.window) return cannot("a sliding window needs the window form");
      if (c.window < 1) return cannot(fmt::format("a window of {} keys has no (left, right) form", c.window));
      d.window = WindowFromKeysIncludingSelf(c.window);
      if (c.window_right > 0) d.window.right = c.window_right;  // two-sided: no causal flag (below)
      break;
    case VisibilityKind::kChunked:
      if (!forms.chunk) return cannot("chunked attention needs the chunk form");
      if (c.chunk < 1) return cannot(fmt::format("a chunk of {} has no chunk form", c.chunk));
      d.chunk = c.chunk;
      break;
  }

  std::vector<int> keys_per_sequence;
  bool square = true;  // every sequence has as many real queries as keys (top-left = bottom-right)
  if (forms.varlen) {
    d.cu_seqlens_q.push_back(0);
    d.cu_seqlens_k.push_back(0);
    for (const auto& [queries, keys] : VarlenSequences(c)) {
      d.cu_seqlens_q.push_back(d.cu_seqlens_q.back() + queries);
      d.cu_seqlens_k.push_back(d.cu_seqlens_k.back() + keys);
      keys_per_sequence.push_back(keys);
      square = square && queries == keys;
    }
    if (c.visibility == VisibilityKind::kPrefixLm) {
      for (const RowSpec& row : c.rows) d.prefix_len.insert(d.prefix_len.end(), row.documents.size(), row.prefix_len);
    }
  } else {
    const int first_query_slot = d.tk - d.tq;
    // Without leftpad_k, a kernel taking seqused_k gets a left-padded row with its
    // keys moved to slot 0 (the ragged layout, KeysCompacted; adapters/packing.h),
    // unless the case asks for the slots as they are (kPadded).
    const bool compact = c.layout != DescriptorLayout::kPadded && !forms.leftpad_k && forms.seqused_k;
    for (size_t b = 0; b < c.rows.size(); ++b) {
      const RowSpec& row = c.rows[b];
      if (NonEmptyDocuments(row) > 1) {
        return cannot(fmt::format("row {} packs {} documents: that needs cu_seqlens (varlen)", b, NonEmptyDocuments(row)));
      }
      const int length = row.real_tokens();
      // Leading queries (first_query_slot < 0, Tq > Tk, no left pad) are real.
      const int first_real = first_query_slot < 0 ? first_query_slot : std::max(row.left_pad, first_query_slot);
      const int end_real = row.left_pad + length;
      const int real_queries = std::max(0, end_real - first_real);
      if (real_queries > 0 && first_real > first_query_slot) {
        return cannot(fmt::format("row {} has query rows inside its left padding: that needs cu_seqlens_q", b));
      }
      if (real_queries < d.tq && !forms.seqused_q) {
        return cannot(fmt::format("row {} has {} padded query rows: that needs seqused_q", b, d.tq - real_queries));
      }
      if (row.left_pad > 0 && !forms.leftpad_k && !compact) {
        return cannot(fmt::format("row {} is left-padded: that needs leftpad_k, or seqused_k with the keys at slot 0", b));
      }
      // A ragged row starts with its first key; a row of pads alone has none to move.
      if (row.left_pad > 0 && !forms.leftpad_k && length == 0) {
        return cannot(fmt::format("row {} is padding alone: without leftpad_k it has no key to start at slot 0", b));
      }
      if (end_real < d.tk && !forms.seqused_k) return cannot(fmt::format("row {} is right-padded: that needs seqused_k", b));
      const int moved = compact ? row.left_pad : 0;  // slots the row's keys move down by
      d.seqused_q.push_back(real_queries);
      d.seqused_k.push_back(end_real - moved);
      d.leftpad_k.push_back(row.left_pad - moved);
      if (c.visibility == VisibilityKind::kPrefixLm) d.prefix_len.push_back(row.prefix_len);
      keys_per_sequence.push_back(end_real - moved);
      square = square && real_queries == length;
    }
    // Drop what the kernel was not asked to take: all-default parts stay empty.
    auto all = [](const std::vector<int32_t>& v, auto pred) { return std::all_of(v.begin(), v.end(), pred); };
    if (all(d.seqused_q, [&](int32_t n) { return n == d.tq; })) d.seqused_q.clear();
    if (all(d.seqused_k, [&](int32_t n) { return n == d.tk; })) d.seqused_k.clear();
    if (all(d.leftpad_k, [](int32_t n) { return n == 0; })) d.leftpad_k.clear();
  }

  // A two-sided window (FlashAttention's causal=False, window_size=(W − 1, R)) bounds
  // the later keys itself; every other kind but bidirectional is causal.
  const bool two_sided = c.visibility == VisibilityKind::kSlidingWindow && c.window_right > 0;
  if (c.visibility != VisibilityKind::kBidirectional && !two_sided) {
    if (forms.causal_bottom_right) {
      d.causal = CausalAlignment::kBottomRight;
    } else if (forms.causal_top_left && square) {
      d.causal = CausalAlignment::kTopLeft;
    } else if (forms.causal_top_left) {
      return cannot("causal visibility with cached keys or padded queries needs bottom-right alignment");
    } else {
      return cannot("causal visibility needs a causal form");
    }
  }

  if (forms.paged) {
    if (forms.page_size < 1) return cannot("the paged form needs a page size of at least 1");
    d.paged = Paginate(keys_per_sequence, forms.page_size, c.seed);
  }

  if (c.encoding.kind == EncodingKind::kAlibi) {
    if (forms.alibi) {
      d.alibi_slopes = AlibiSlopes(c.q_heads);
    } else if (forms.alibi_max_bias) {
      d.alibi_max_bias = 8.0;
    } else {
      return cannot("an ALiBi bias needs the alibi form");
    }
  } else if (IsScoreBiasKind(c.encoding.kind)) {
    return cannot("this score bias has no descriptor form (it needs a dense additive mask)");
  }
  if (c.softcap > 0.0) {
    if (!forms.softcap) return cannot("softcap needs the softcap form");
    d.softcap = c.softcap;
  }
  return d;
}

Case StepCase(const Case& c, int keys, int queries, StepCache cache) {
  Case step = c;
  step.query_len = queries;
  step.decode_chunks.clear();
  // A session's cache is the padded batch, slots as they are; the caller's keeps the case's layout.
  if (cache == StepCache::kSession) {
    step.layout = c.mask == MaskConvention::kDescriptor ? DescriptorLayout::kPadded : DescriptorLayout::kAuto;
    step.page_size = 0;
  }
  for (RowSpec& row : step.rows) {
    int room = keys;
    const int left_pad = std::min(row.left_pad, room);
    room -= left_pad;
    row.left_pad = left_pad;
    for (int& length : row.documents) {
      length = std::min(length, room);
      room -= length;
    }
    row.right_pad = std::min(row.right_pad, room);
  }
  return step;
}

PackedTokens PackedTokensOf(const Case& c) {
  PackedTokens tokens;
  const int tk = c.key_len(), first_query_slot = tk - c.query_len;
  for (int b = 0; b < c.batch(); ++b) {
    const RowSpec& row = c.rows[b];
    for (int i = 0; i < -first_query_slot; ++i) tokens.query_of.emplace_back(b, i);  // leading (Tq > Tk)
    int slot = row.left_pad;
    for (int length : row.documents) {
      for (int t = 0; t < length; ++t, ++slot) {
        tokens.key_of.emplace_back(b, slot);
        if (slot >= first_query_slot) tokens.query_of.emplace_back(b, slot - first_query_slot);
      }
    }
  }
  return tokens;
}

bool DescriptorSees(const VisibilityDescriptor& d, int sequence, int i, int j) {
  const SequenceShape shape = ShapeOf(d, sequence);
  if (i < 0 || i >= shape.nq || j < 0 || j >= shape.nk) return false;
  const int diagonal = d.causal == CausalAlignment::kTopLeft ? i : i + shape.nk - shape.nq;
  const int prefix = d.prefix_len.empty() ? 0 : d.prefix_len[sequence];
  if (diagonal >= 0 && diagonal < prefix && j < prefix) return true;
  if (d.causal != CausalAlignment::kNone && j > diagonal) return false;
  if (d.window.left >= 0 && j < diagonal - d.window.left) return false;
  if (d.window.right >= 0 && j > diagonal + d.window.right) return false;
  if (d.chunk > 0 && FloorDiv(j, d.chunk) != FloorDiv(diagonal, d.chunk)) return false;
  return true;
}

std::vector<uint8_t> DescriptorVisibility(const VisibilityDescriptor& d) {
  if (d.varlen()) {
    const int total_q = d.cu_seqlens_q.back(), total_k = d.cu_seqlens_k.back();
    std::vector<uint8_t> visible(static_cast<size_t>(total_q) * total_k, 0);
    for (int s = 0; s < d.sequences(); ++s)
      for (int i = d.cu_seqlens_q[s]; i < d.cu_seqlens_q[s + 1]; ++i)
        for (int j = d.cu_seqlens_k[s]; j < d.cu_seqlens_k[s + 1]; ++j)
          visible[static_cast<size_t>(i) * total_k + j] =
              DescriptorSees(d, s, i - d.cu_seqlens_q[s], j - d.cu_seqlens_k[s]);
    return visible;
  }
  std::vector<uint8_t> visible(static_cast<size_t>(d.batch) * d.tq * d.tk, 0);
  for (int b = 0; b < d.batch; ++b) {
    const int left_pad = ShapeOf(d, b).left_pad;
    for (int i = 0; i < d.tq; ++i)
      for (int j = 0; j < d.tk; ++j)
        visible[(static_cast<size_t>(b) * d.tq + i) * d.tk + j] = DescriptorSees(d, b, i, j - left_pad);
  }
  return visible;
}

bool KeysCompacted(const VisibilityDescriptor& d, const Case& c) {
  return !d.varlen() && d.leftpad_k.empty() &&
         std::any_of(c.rows.begin(), c.rows.end(), [](const RowSpec& row) { return row.left_pad > 0; });
}

int KeySlotShift(const VisibilityDescriptor& d, const Case& c, int row) {
  return KeysCompacted(d, c) ? c.rows[static_cast<size_t>(row)].left_pad : 0;
}

std::vector<uint8_t> DescriptorVisibilityOnCase(const VisibilityDescriptor& d, const Case& c) {
  if (KeysCompacted(d, c)) {  // key slot j of the call is slot j + left pad of the case
    const std::vector<uint8_t> called = DescriptorVisibility(d);
    std::vector<uint8_t> visible(called.size(), 0);
    for (int b = 0; b < d.batch; ++b) {
      const int shift = KeySlotShift(d, c, b);
      for (int i = 0; i < d.tq; ++i)
        for (int j = 0; j + shift < d.tk; ++j) {
          const size_t row = (static_cast<size_t>(b) * d.tq + i) * d.tk;
          visible[row + j + shift] = called[row + j];
        }
    }
    return visible;
  }
  if (!d.varlen()) return DescriptorVisibility(d);
  const int tq = c.query_len, tk = c.key_len();
  std::vector<uint8_t> visible(static_cast<size_t>(c.batch()) * tq * tk, 0);
  const std::vector<uint8_t> packed = DescriptorVisibility(d);
  const PackedTokens tokens = PackedTokensOf(c);
  const size_t total_k = tokens.key_of.size();
  for (size_t q = 0; q < tokens.query_of.size(); ++q) {
    const auto [b, i] = tokens.query_of[q];
    for (size_t k = 0; k < total_k; ++k) {
      // Sequences never cross rows, so a visible pair names a key of row b.
      const int j = tokens.key_of[k].second;
      if (packed[q * total_k + k] != 0) visible[(static_cast<size_t>(b) * tq + i) * tk + j] = 1;
    }
  }
  return visible;
}

std::vector<double> AlibiSlopesFromMaxBias(double max_bias, int heads) {
  const int m = heads < 1 ? 1 : 1 << static_cast<int>(std::floor(std::log2(heads)));
  const double m0 = std::pow(2.0, -max_bias / m), m1 = std::pow(2.0, -max_bias / 2.0 / m);
  std::vector<double> slopes(static_cast<size_t>(std::max(heads, 0)));
  for (int h = 0; h < heads; ++h) slopes[h] = h < m ? std::pow(m0, h + 1) : std::pow(m1, 2 * (h - m) + 1);
  return slopes;
}

DescriptorForms FlashAttentionForms(bool varlen, int page_size) {
  DescriptorForms f;
  f.causal_bottom_right = f.window = f.prefix = f.chunk = f.alibi = f.softcap = true;
  f.varlen = varlen;
  f.seqused_q = f.seqused_k = f.leftpad_k = !varlen;
  f.paged = page_size > 0;
  f.page_size = page_size;
  return f;
}

std::string DescriptorText(const VisibilityDescriptor& d) {
  static constexpr const char* kAlignment[] = {"none", "top-left", "bottom-right"};
  std::string text = fmt::format("causal: {}\n", kAlignment[static_cast<int>(d.causal)]);
  text += fmt::format("window (left, right): ({}, {})\n", d.window.left, d.window.right);
  ForEachIntArray(d, [&text](const char* name, const std::vector<int32_t>& values) {
    if (!values.empty()) text += fmt::format("{}: {}\n", name, fmt::join(values, " "));
  });
  if (d.chunk > 0) text += fmt::format("chunk: {}\n", d.chunk);
  if (d.paged.page_size > 0) {
    text += fmt::format("page size: {}, {} physical pages\n", d.paged.page_size, d.paged.num_pages);
    for (int s = 0; s < d.sequences(); ++s) {
      const auto first = d.paged.block_table.begin() + static_cast<std::ptrdiff_t>(s) * d.paged.max_blocks;
      text += fmt::format("block table[{}]: {}\n", s, fmt::join(first, first + d.paged.max_blocks, " "));
    }
  }
  if (!d.alibi_slopes.empty()) text += fmt::format("alibi slopes: {:.6g}\n", fmt::join(d.alibi_slopes, " "));
  if (d.alibi_max_bias > 0.0) text += fmt::format("alibi max_bias: {}\n", d.alibi_max_bias);
  if (d.softcap > 0.0) text += fmt::format("softcap: {}\n", d.softcap);
  return text;
}

std::pair<int, int> PagedSlot(const PagedKv& paged, int sequence, int t) {
  return {paged.block_table[static_cast<size_t>(sequence) * paged.max_blocks + t / paged.page_size],
          t % paged.page_size};
}

}  // namespace attncheck::reference
