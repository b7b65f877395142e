// The visibility descriptor (DESIGN §5): what a FlashAttention-class kernel is
// given instead of a dense mask — causal with its alignment, a window, varlen
// packing, used key lengths and left padding, prefix and chunk, a paged KV layout,
// kernel-owned ALiBi slopes, softcap. A plain value; reference/descriptor.h builds
// one from a Case (or says why the kernel's forms cannot) and states its meaning
// as dense visibility.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace attncheck {

enum class CausalAlignment {
  kNone,         // no causal constraint (a window may still bound both sides)
  kTopLeft,      // the diagonal of query i is key i
  kBottomRight,  // the diagonal of query i is key i + (Tk − Tq) of its sequence
};

// A window as FlashAttention's window_size=(left, right): inclusive offsets from
// the aligned diagonal d(i); key j is inside when d(i) − left ≤ j ≤ d(i) + right.
// −1 means unbounded on that side. Causal is right = 0.
struct Window {
  int left = -1;
  int right = -1;
  bool operator==(const Window&) const = default;
};

// The other conventions kernels use for the same window, and back:
//   W keys including self (Mistral's sliding_window, Case::window):  (W − 1, 0)
//   cuDNN's diagonal band left bound (PyTorch passes window_size_left + 1): left + 1
// keys ≥ 1: a window of 0 keys has no (left, right) form (left = −1 is unbounded).
Window WindowFromKeysIncludingSelf(int keys);
// W for a causal window (left ≥ 0, right = 0); nullopt for any other window.
std::optional<int> KeysIncludingSelf(const Window& window);
// cuDNN's left bound for a bounded left side; nullopt when left is unbounded.
std::optional<int> CudnnLeftBound(const Window& window);
Window WindowFromCudnnLeftBound(int left_bound, int right_bound);

// A paged KV layout: sequence b's logical key slot t lives in physical page
// block_table[b·max_blocks + t / page_size] at offset t % page_size. Pages are
// shuffled; table entries past a sequence's last page and unused physical pages
// hold garbage (the builder fills them with a page no sequence uses).
struct PagedKv {
  int page_size = 0;  // 0: contiguous K/V, no paging
  int max_blocks = 0;
  int num_pages = 0;
  std::vector<int32_t> block_table;  // [sequences, max_blocks]
  bool operator==(const PagedKv&) const = default;
};

struct VisibilityDescriptor {
  // The padded batch the tensors have: B rows of Tq queries and Tk key slots.
  int batch = 0;
  int tq = 0;
  int tk = 0;

  CausalAlignment causal = CausalAlignment::kNone;
  Window window;  // relative to the alignment's diagonal (bottom-right when causal is kNone)

  // Varlen: sequences packed on one token axis, sequence s owning queries
  // [cu_seqlens_q[s], cu_seqlens_q[s+1]) and keys [cu_seqlens_k[s], cu_seqlens_k[s+1]).
  // Empty: the padded batch, one sequence per row.
  std::vector<int32_t> cu_seqlens_q;  // [S + 1]
  std::vector<int32_t> cu_seqlens_k;  // [S + 1]

  // Padded batch (FlashAttention's block_info: keys [leftpad_k, seqused_k) are the
  // sequence's; seqused_k counts the left pad). Empty: every slot is used.
  std::vector<int32_t> seqused_q;  // [B] the first seqused_q[b] query rows are real
  std::vector<int32_t> seqused_k;  // [B]
  std::vector<int32_t> leftpad_k;  // [B]

  // Per sequence (S for varlen, B for the padded batch); empty: none.
  std::vector<int32_t> prefix_len;  // prefix-LM: the first P tokens of a sequence see each other
  int chunk = 0;                    // chunked local attention: ⌊t/C⌋ equal (0: off)

  PagedKv paged;

  // Kernel-owned ALiBi, −slope_h·|d(i) − j|: slopes per query head, or ggml's form
  // (slopes from max_bias and the head count; 0: none). At most one is set.
  std::vector<double> alibi_slopes;  // [Hq]
  double alibi_max_bias = 0.0;
  double softcap = 0.0;

  bool operator==(const VisibilityDescriptor&) const = default;
  bool varlen() const { return !cu_seqlens_q.empty(); }
  int sequences() const { return varlen() ? static_cast<int>(cu_seqlens_q.size()) - 1 : batch; }
};

// The descriptor's per-sequence and per-row integer arrays with their names
// (attncheck_visibility's), in one order: fn(name, const std::vector<int32_t>&).
// `attncheck show` and the process protocol's JSON both list them so.
template <class Fn>
void ForEachIntArray(const VisibilityDescriptor& d, Fn fn) {
  fn("cu_seqlens_q", d.cu_seqlens_q);
  fn("cu_seqlens_k", d.cu_seqlens_k);
  fn("seqused_q", d.seqused_q);
  fn("seqused_k", d.seqused_k);
  fn("leftpad_k", d.leftpad_k);
  fn("prefix_len", d.prefix_len);
}

// The structured parts a kernel can take (its declared descriptor forms).
struct DescriptorForms {
  bool causal_top_left = false;
  bool causal_bottom_right = false;
  bool window = false;      // (left, right) bounds
  bool varlen = false;      // cu_seqlens_q / cu_seqlens_k
  bool seqused_q = false;   // real query rows of a padded batch
  bool seqused_k = false;   // used key lengths of a padded batch
  bool leftpad_k = false;   // left padding of a padded batch
  bool prefix = false;      // prefix-LM length
  bool chunk = false;       // chunked local attention
  bool paged = false;       // block table + page size
  int page_size = 0;        // the page size the kernel takes (paged)
  std::vector<int> more_page_sizes;  // further page sizes it takes, each gated in turn (Case::page_size)
  bool alibi = false;       // ALiBi slopes per head
  bool alibi_max_bias = false;  // ALiBi as ggml's max_bias (8 gives the paper's slopes)
  bool softcap = false;
  bool varlen_backward = false;  // with varlen: the backward call takes cu_seqlens too
};

}  // namespace attncheck
