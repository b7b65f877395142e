// The size tier (Capabilities::size_tier): a declared share of cases drawn at the
// shapes where real kernels switch paths — ggml's flash_attn_ext takes its tiled
// path at Tq ≥ 64 and splits the keys at Tk ≥ 512 for one query; matmul blocks at
// large Tk and D. Decode calls DrawSizeTier once, after the small shape draws.
#pragma once

#include <algorithm>
#include <span>
#include <vector>

#include "cases/capabilities.h"
#include "cases/case.h"
#include "cases/source.h"

namespace attncheck {

// Tables weighted toward the cheapest shape of the tier (an entry repeated is
// drawn more often): a gate spends most of its tier time on Tq·Tk·D·H.
// Tier key lengths: ggml's 64-wide KV tiles and its split-KV threshold (512).
inline constexpr int kTierKeyLengths[] = {256, 256, 256, 257, 511, 512, 513};
// Tier query lengths: ggml's 64-row Q tiles, and a prefill of 256.
inline constexpr int kTierQueryLengths[] = {64, 64, 64, 65, 127, 128, 256};
inline constexpr int kTierHeadDims[] = {64, 64, 64, 128};
inline constexpr int kTierMinKeyLength = kTierKeyLengths[0];

namespace decode_detail {

// The entries of `table` in [lo, hi] (empty when none is).
template <size_t N>
std::vector<int> Within(const int (&table)[N], int lo, int hi) {
  std::vector<int> kept;
  for (int v : table)
    if (v >= lo && v <= hi) kept.push_back(v);
  return kept;
}

}  // namespace decode_detail

// With probability size_tier.percent %, redraws the shape of `c` (heads, head and
// value dims, Tq) at tier sizes, lowers `max_batch` to the tier's and returns the
// tier's key length; otherwise returns `key_len` and leaves both alone. Nothing is drawn for an adapter without
// a tier, so its cases stay what they were; an exhausted source (all draws 0)
// stays out of the tier. `top_left`: a top-left causal flag needs Tq = Tk.
template <Source S>
int DrawSizeTier(S& src, const Capabilities& caps, bool top_left, int key_len, int& max_batch, Case& c) {
  using decode_detail::Within;
  const SizeTier& tier = caps.size_tier;
  const int max_tokens = std::min({tier.max_tokens, kMaxKeyLen, caps.max_position + 1});
  const std::vector<int> key_lengths = Within(kTierKeyLengths, kTierMinKeyLength, max_tokens);
  const std::vector<int> head_dims = Within(kTierHeadDims, 2, std::min(tier.max_head_dim, kMaxDim));
  if (tier.percent <= 0 || key_lengths.empty() || head_dims.empty()) return key_len;
  if (src.Int(0, 99, "size_tier") < 100 - std::min(tier.percent, 100)) return key_len;

  max_batch = std::clamp(tier.max_batch, 1, max_batch);
  const int tier_key_len = Pick(src, std::span<const int>(key_lengths), "size_tier.key_len");
  const std::vector<int> query_lengths =
      Within(kTierQueryLengths, 1, std::min(tier.max_query_len, tier_key_len));  // duplicates kept
  c.query_len = top_left || query_lengths.empty()
                    ? tier_key_len
                    : Pick(src, std::span<const int>(query_lengths), "size_tier.query_len");
  // Several heads; with GQA the grouped layouts first (Hkv < Hq is what llama.cpp runs).
  const int max_heads = std::clamp(tier.max_heads, 1, kMaxHeads);
  c.q_heads = static_cast<int>(src.Int(std::min(2, max_heads), max_heads, "size_tier.q_heads"));
  c.kv_heads = c.q_heads;
  if (caps.gqa) {
    std::vector<int> divisors;
    for (int d = 1; d <= c.q_heads; ++d)
      if (c.q_heads % d == 0) divisors.push_back(d);
    c.kv_heads = Pick(src, std::span<const int>(divisors), "size_tier.kv_heads");
  }
  c.head_dim = Pick(src, std::span<const int>(head_dims), "size_tier.head_dim");
  c.value_dim = c.head_dim;
  if (caps.value_dim_differs && src.Bool("size_tier.value_dim.differs")) {
    c.value_dim = Pick(src, std::span<const int>(head_dims), "size_tier.value_dim");
  }
  return tier_key_len;
}

// The share of cases DrawTileEdges draws at tile edges for a kernel declaring
// tile_sizes (issue: "in at least a tenth of the cases").
inline constexpr int kTileEdgePercent = 15;

// For a kernel declaring tile_sizes, with probability kTileEdgePercent %: Tk redrawn
// to m·t − 1, m·t or m·t + 1 for a declared tile t (m ≥ 1, within [min_len,
// max_tokens]), and Tq to a tile edge of its own up to Tk (Tq = Tk for a top-left
// flag). Returns the key length; nothing is drawn for a kernel without tiles, so
// its cases stay what they were. Called when the size tier did not redraw the shape.
template <Source S>
int DrawTileEdges(S& src, const Capabilities& caps, bool top_left, int key_len, int min_len, int max_tokens,
                  Case& c) {
  if (caps.tile_sizes.empty() || max_tokens < 1) return key_len;
  // (an exhausted source, all draws 0, stays off the edges, as out of the size tier)
  if (src.Int(0, 99, "tile_edge") < 100 - kTileEdgePercent) return key_len;
  const auto edge = [&src](int tile, int lo, int hi, const char* at) {
    // the edges m·t + {−1, 0, 1} inside [lo, hi]
    std::vector<int> edges;
    for (int m = 1; m * tile - 1 <= hi; ++m)
      for (int e : {m * tile - 1, m * tile, m * tile + 1})
        if (e >= lo && e <= hi) edges.push_back(e);
    return edges.empty() ? 0 : Pick(src, std::span<const int>(edges), at);
  };
  const int tile = Pick(src, std::span<const int>(caps.tile_sizes), "tile_edge.tile");
  const int tk = edge(tile, std::max(min_len, 1), max_tokens, "tile_edge.key_len");
  if (tk == 0) return key_len;  // no edge of that tile fits the kernel's lengths
  key_len = tk;
  if (top_left) {
    c.query_len = key_len;
  } else {
    const int tq = edge(Pick(src, std::span<const int>(caps.tile_sizes), "tile_edge.query_tile"), 1, key_len,
                        "tile_edge.query_len");
    c.query_len = tq > 0 ? tq : std::min(c.query_len, key_len);
  }
  return key_len;
}

}  // namespace attncheck
