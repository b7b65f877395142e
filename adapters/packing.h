// The tensors of a varlen or paged descriptor call (include/attncheck/adapter.h,
// "Tensor layouts"): the harness packs the padded [B, H, T, D] tensors onto
// FlashAttention's packed token axis (flash_attn_varlen_func) and scatters K/V into
// shuffled pages (flash_attn_with_kvcache's block_table), then unpacks the output.
#pragma once

#include <span>
#include <vector>

#include "adapters/adapter.h"
#include "cases/capabilities.h"
#include "cases/case.h"
#include "cases/visibility_descriptor.h"
#include "reference/tensor.h"

namespace attncheck {

// The value written into unused pages and table entries past a sequence's last
// page: a kernel that reads one gets NaN in its output.
inline constexpr float kGarbage = __builtin_nanf("");

// One call's buffers in the descriptor's layout, with the extents handed over.
struct PackedCall {
  int batch = 0, tq = 0, tk = 0;  // varlen: 1, total_q, total_k; padded: B, Tq, Tk (tk logical when paged)
  TensorF q;                      // varlen [1, Hq, total_q, D]; padded [B, Hq, Tq, D]
  TensorF k, v;                   // contiguous [batch, Hkv, tk, ·]; paged [num_pages, Hkv, page_size, ·]
  std::vector<int> query_positions;  // [batch, tq]
  std::vector<int> key_positions;    // [batch, tk] (logical keys, also when paged)
};

// Whether the layout of d = Describe(c, ...) is other than c's padded [B, H, T, D]
// tensors: varlen, paged, or a padded batch with its keys moved to slot 0
// (reference::KeysCompacted: k, v and key positions rotated down by the row's left pad,
// the pad slots after the row's keys).
bool NeedsPacking(const VisibilityDescriptor& d, const Case& c);

// The shape call `a` hands k (dim = D) or v (dim = Dv) over in: the pages
// [num_pages, Hkv, page_size, dim] when its descriptor is paged, else [batch, Hkv, tk, dim].
std::vector<int64_t> KvShape(const AttentionArgs& a, int dim);

// The forms a decode session's steps are described in: its KV cache is a padded
// batch (flash_attn_with_kvcache's cache_seqlens and cache_leftpad), so a kernel
// declaring varlen or paged gets them off and seqused_q / seqused_k / leftpad_k on
// there; the rest as declared.
DescriptorForms SessionForms(DescriptorForms forms);

// q, k, v [B, H, T, ·] and positions [B, T] of case c, in d's layout (d = Describe(c, ...)).
void Pack(const Case& c, const VisibilityDescriptor& d, const TensorF& q, const TensorF& k, const TensorF& v,
          std::span<const int> query_positions, std::span<const int> key_positions, PackedCall& packed);

// The kernel's out [batch, Hq, tq, Dv] back into out [B, Hq, Tq, Dv]. A query
// slot in no varlen sequence (a pad query) is not kernel output: it gets the value
// `policy` declares for a row with no visible key (0 for zeros and unspecified,
// NaN, or the mean of v [B, Hkv, Tk, Dv] over the row's key slots for mean-v), so
// the laws read the declared convention there, and 1 in `unproduced` [B, Tq] (left
// empty when the kernel produced every row): its value checks nothing the kernel did.
void Unpack(const Case& c, const VisibilityDescriptor& d, std::span<const float> kernel_out, MaskedRowPolicy policy,
            const TensorF& v, TensorD& out, std::vector<uint8_t>& unproduced);

// A varlen backward call (a paged one has none: no kernel pages its backward): the
// rows of `rows` [B, H, Tq, ·] at the varlen queries of case c, on the packed query
// axis [1, H, total_q, ·] (dout, the saved forward's out and lse).
void PackQueryRows(const Case& c, const TensorF& rows, TensorF& packed);
// The kernel's packed rows [1, H, total, dim] (dq and lse on the query axis, dk and dv
// on the key axis: `keys`) back at their slots of `to` [B, H, T, dim]; a slot in no
// sequence keeps what `to` holds (a pad query's or pad key's gradient: none).
void UnpackRows(const Case& c, bool keys, std::span<const float> packed, TensorD& to);
// A compacted padded call's key rows [B, H, Tk, dim] (dk, dv) back at c's slots of
// `to` (the rotation Pack applied, undone).
void UncompactKeyRows(const Case& c, const VisibilityDescriptor& d, std::span<const float> rows, TensorD& to);

}  // namespace attncheck
