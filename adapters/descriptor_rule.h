// A kernel's reading of the visibility descriptor (cases/visibility_descriptor.h),
// written as FlashAttention reads it (block_info.h, mask.h) and shared by our
// kernels: row b's keys are slots [leftpad_k, seqused_k), its real queries rows
// [0, seqused_q); varlen sequence s has the packed queries and keys between its
// cu_seqlens entries, and its key j lives in page block_table[s, j / page_size]
// at offset j % page_size when paged; query i's diagonal is i (top-left) or i + nk − nq (bottom-right);
// key j of the sequence is visible under causal (j ≤ diagonal), inside the window
// [diagonal − left, diagonal + right] and the diagonal's chunk, or in the prefix
// when the query is. It is the kernels' own code, not the reference's
// (reference/descriptor.h), so a slip here is a kernel bug the laws must catch:
// DescriptorSlips switches on the shipped slips the descriptor mutants carry.
#pragma once

#include <algorithm>
#include <cmath>

#include "cases/visibility_descriptor.h"

namespace attncheck::adapters {

// One-line slips in reading a descriptor, all off in a correct kernel.
struct DescriptorSlips {
  bool window_left_as_keys = false;  // window (W − 1, 0) read as W keys back: admits W + 1
  int causal_tile = 0;               // > 0: causality decided per tile of that many rows and keys
  bool seqused_k_ignored = false;    // keys past seqused_k (right padding) read
  bool leftpad_k_ignored = false;    // keys before leftpad_k (left padding) read
  bool top_left = false;             // the diagonal aligned top-left whatever the descriptor says
  bool offset_clamped = false;       // bottom-right offset nk − nq clamped at 0: Tq > Tk rows top-left
  bool cu_seqlens_k_off_by_one = false;  // sequence s's keys end at cu_seqlens_k[s + 1] + 1
  bool block_table_row0 = false;         // every sequence reads block-table row 0
  bool alibi_pow2 = false;               // max_bias slopes as if the head count were a power of two
  bool window_right_dropped = false;     // a two-sided window's right bound dropped: later keys all read
  bool offset_from_extents = false;      // bottom-right offset Tk − Tq of the padded tensors, not nk − nq
  bool decode_full_pages_only = false;   // paged: a one-query sequence over more keys (a decode step)
                                         // reads its full pages only, dropping a partly filled last page
};

// The descriptor forms our kernels take: FlashAttention's padded batch (causal
// bottom-right, window, seqused_q/k, leftpad_k), prefix, chunk and softcap; no
// varlen or paged KV (VarlenDescriptorForms), no ALiBi slopes.
inline DescriptorForms PaddedDescriptorForms() {
  DescriptorForms f;
  f.causal_bottom_right = f.window = f.seqused_q = f.seqused_k = f.leftpad_k = true;
  f.prefix = f.chunk = f.softcap = true;
  return f;
}

// FlashAttention's varlen forms (flash_attn_varlen_func: cu_seqlens_q/k; with
// page_size > 0 also flash_attn_with_kvcache's block_table): causal bottom-right,
// window, prefix, chunk, ALiBi slopes, softcap; no padded-batch parts.
inline DescriptorForms VarlenDescriptorForms(int page_size) {
  DescriptorForms f;
  f.causal_bottom_right = f.window = f.varlen = f.prefix = f.chunk = f.alibi = f.softcap = true;
  f.paged = page_size > 0;
  f.page_size = page_size;
  return f;
}

struct DescriptorRule {
  const VisibilityDescriptor* d = nullptr;
  int tq = 0, tk = 0;
  DescriptorSlips slips;

  struct Row {
    int nq, nk, left_pad;
  };
  // Batch row b of a padded batch, or varlen sequence b.
  Row RowOf(int b) const {
    if (d->varlen()) {
      const int k0 = d->cu_seqlens_k[b], total_k = d->cu_seqlens_k.back();
      const int end = d->cu_seqlens_k[b + 1];
      const int k1 = slips.cu_seqlens_k_off_by_one ? std::min(end + 1, total_k) : end;
      return {d->cu_seqlens_q[b + 1] - d->cu_seqlens_q[b], k1 - k0, 0};
    }
    const int left_pad = d->leftpad_k.empty() || slips.leftpad_k_ignored ? 0 : d->leftpad_k[b];
    const int used = d->seqused_k.empty() || slips.seqused_k_ignored ? tk : d->seqused_k[b];
    return {d->seqused_q.empty() ? tq : d->seqused_q[b], used - left_pad, left_pad};
  }
  int Diagonal(const Row& row, int i) const {
    if (d->causal == CausalAlignment::kTopLeft || slips.top_left) return i;
    if (slips.offset_from_extents) return i + tk - tq;
    return i + (slips.offset_clamped ? std::max(0, row.nk - row.nq) : row.nk - row.nq);
  }
  int Prefix(int b) const { return d->prefix_len.empty() ? 0 : d->prefix_len[b]; }
  int Left() const { return slips.window_left_as_keys && d->window.left >= 0 ? d->window.left + 1 : d->window.left; }
  int Right() const { return slips.window_right_dropped ? -1 : d->window.right; }
  static int FloorDiv(int a, int c) { return a >= 0 ? a / c : -((-a + c - 1) / c); }
  // The causal bound of query i: its diagonal, or with the per-tile slip the last
  // diagonal of its row tile for every key of the tile that diagonal reaches.
  int CausalLast(const Row& row, int i) const {
    if (slips.causal_tile <= 0) return Diagonal(row, i);
    const int tile_end = std::min(row.nq, (i / slips.causal_tile + 1) * slips.causal_tile) - 1;
    const int last = Diagonal(row, tile_end);
    return last < 0 ? last : (last / slips.causal_tile + 1) * slips.causal_tile - 1;
  }

  // Where key j of sequence s lives in a paged K/V [num_pages, H, page_size, ·]:
  // its row (page · H + head) · page_size + offset. The kernel's own indexing.
  size_t PagedRow(int s, int head, int heads, int j) const {
    const PagedKv& p = d->paged;
    const size_t table_row = static_cast<size_t>(slips.block_table_row0 ? 0 : s) * p.max_blocks;
    const int page = p.block_table[table_row + j / p.page_size];
    return (static_cast<size_t>(page) * heads + head) * p.page_size + j % p.page_size;
  }

  // Kernel-owned ALiBi slope of query head h of `heads`: the descriptor's, or from
  // max_bias as ggml_soft_max_ext computes it (m = 2^⌊log2 H⌋: head h < m gets
  // 2^(−max_bias/m)^(h+1), the rest 2^(−max_bias/2m)^(2(h−m)+1)); 0 without ALiBi.
  double Slope(int h, int heads) const {
    if (!d->alibi_slopes.empty()) return d->alibi_slopes[static_cast<size_t>(h)];
    if (d->alibi_max_bias <= 0.0) return 0.0;
    const int m = slips.alibi_pow2 ? heads : 1 << static_cast<int>(std::floor(std::log2(heads)));
    return h < m ? std::pow(2.0, -d->alibi_max_bias / m * (h + 1))
                 : std::pow(2.0, -d->alibi_max_bias / (2.0 * m) * (2 * (h - m) + 1));
  }
  // The ALiBi score bias −slope·|d(i) − j| of query i and key slot `slot` of row b.
  double AlibiBias(double slope, int b, int i, int slot) const {
    const Row row = RowOf(b);
    return -slope * std::abs(Diagonal(row, i) - (slot - row.left_pad));
  }

  bool Visible(int b, int i, int slot) const {
    const Row row = RowOf(b);
    const int j = slot - row.left_pad;
    if (i >= row.nq || j < 0 || j >= row.nk) return false;
    if (slips.decode_full_pages_only && d->paged.page_size > 0 && row.nq == 1 && row.nk > 1 &&
        j >= row.nk / d->paged.page_size * d->paged.page_size) {
      return false;
    }
    const int diagonal = Diagonal(row, i);
    if (diagonal >= 0 && diagonal < Prefix(b) && j < Prefix(b)) return true;
    if (d->causal != CausalAlignment::kNone && j > CausalLast(row, i)) return false;
    if (Left() >= 0 && j < diagonal - Left()) return false;
    if (Right() >= 0 && j > diagonal + Right()) return false;
    return d->chunk <= 0 || FloorDiv(j, d->chunk) == FloorDiv(diagonal, d->chunk);
  }
  // Block skipping: the key slots rows [i0, i1) can reach, [first, last] (a superset:
  // the diagonal grows with i, so the first row bounds from below and the last from above).
  bool AnyVisible(int b, int i0, int i1, int j0, int j1) const {
    const Row row = RowOf(b);
    i1 = std::min(i1, row.nq);
    if (i0 >= i1 || row.nk <= 0) return false;
    int first = 0, last = row.nk - 1;
    const int low = Diagonal(row, i0), high = Diagonal(row, i1 - 1);
    if (low >= Prefix(b)) {  // no row of the block is in the prefix
      if (Left() >= 0) first = std::max(first, low - Left());
      if (d->causal != CausalAlignment::kNone) last = std::min(last, CausalLast(row, i1 - 1));
      if (Right() >= 0) last = std::min(last, high + Right());
    }
    return first <= last && j0 <= row.left_pad + last && j1 - 1 >= row.left_pad + first;
  }
};

}  // namespace attncheck::adapters
