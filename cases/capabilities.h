// What a kernel under test implements and promises (DESIGN §5). Decode draws
// cases inside these capabilities, so it lives with the vocabulary.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cases/accuracy.h"
#include "cases/case.h"
#include "cases/visibility_descriptor.h"

namespace attncheck {

// The output a kernel promises for a query row with no visible key. kMeanV: the
// row attends to every key of its batch row with equal weight (what a softmax over
// equal scores gives); kUnspecified promises nothing (NaN there is a hazard).
// Numbered as the C ABI's attncheck_masked_row_policy.
enum class MaskedRowPolicy { kZeros, kNaN, kUnspecified, kMeanV };
std::string_view Name(MaskedRowPolicy);
// nullopt for a name no policy has.
std::optional<MaskedRowPolicy> MaskedRowPolicyFromName(std::string_view name);

// Which entries of an additive mask block a key. kFill: every value at or below
// the convention's fill (−inf, lowest, −1e4, −1e9) blocks, so a row filled with it
// has no visible key. kNegInfOnly: only −inf blocks; a finite fill is a very
// negative score (ggml), so a row filled with it attends to every key.
// kFillRows: the mask is added to the scores, so a key at a finite fill whose score
// outweighs it is read, but a row whose every entry is at or below the fill has no
// visible key (ONNX Attention: "added to the attention score", and onnx#8068's
// zero row for a fully masked one).
enum class Blocking { kFill, kNegInfOnly, kFillRows };
std::string_view Name(Blocking);
std::optional<Blocking> BlockingFromName(std::string_view name);

// A size tier: a share of cases drawn at the shapes where real kernels switch
// paths (ggml's tiled flash attention at Tq ≥ 64, blocked matmul at large Tk and
// D). Decode draws them in cases/size_tier.h; percent 0 = no tier.
struct SizeTier {
  int percent = 0;         // share of drawn cases in the tier, 0–100
  int max_tokens = 512;    // Tk drawn in [256, max_tokens]
  int max_query_len = 256; // Tq drawn in [64, max_query_len] (Tq = Tk for a top-left flag)
  int max_head_dim = 128;  // D from {64, 128}, up to this
  int max_heads = 4;       // query heads in [2, max_heads]
  int max_batch = 1;       // batch rows (llama.cpp's prompt processing runs one)
};

// Where an adapter's contract is written down, so a report can name the key that
// declares what the kernel does: the adapter's own code, the C ABI table
// (attncheck_capabilities / attncheck_contract), or a process backend's hello.
enum class ContractSource { kCode, kCAbi, kProtocol };

struct Capabilities {
  // stages the adapter computes itself; the harness runs the reference for the rest
  bool owns_rope = false;        // applies RoPE / xPos / absolute encodings from positions
  bool owns_bias = false;        // applies ALiBi / T5 / KERPLE / Sandwich score bias
  bool has_rope_stage = false;   // implements Adapter::rope (rotation alone)
  bool has_session = false;      // implements a cached-decode session
  // Contract: its session rotates each token (RoPE) as one attention call at the same
  // position does, with the same float angles (a KV cache attended through the call
  // itself, as the Python kit's kv_cache_session). decode-consistency then leaves the
  // kernel's RoPE angle error out of the session-vs-prefill comparison (it is the same
  // on both sides: properties/tolerance.h SharedAngles), as it does for a cache the
  // caller owns. false: the session may rotate its cache on another float path.
  bool session_rope_as_call = false;
  bool has_backward = false;     // implements Adapter::backward (dq, dk, dv; the backward-* laws)
  // its backward also writes the forward's log-sum-exp "lse" [B, Hq, Tq] (as
  // FlashAttention's softmax_lse; backward-agreement checks it on rows that see a key)
  bool backward_lse = false;
  // its backward takes the forward's saved output "saved_out" [B, Hq, Tq, Dv] and
  // log-sum-exp "saved_lse" [B, Hq, Tq] as inputs (BackwardArgs; FlashAttention's
  // backward reads out and softmax_lse) instead of recomputing them
  bool backward_saved = false;
  // Contract: its backward called twice on the same inputs answers the same bits.
  // false: it sums dQ, dK or dV in a run-dependent order (atomic adds across tiles, as
  // FlashAttention-2's and the memory-efficient kernel's dQ), so the backward laws that
  // compare two runs allow that order's rounding (backward_support.h SummationOrder).
  bool backward_deterministic = true;

  std::vector<Dtype> dtypes = {Dtype::kF32};
  std::vector<MaskConvention> masks = {MaskConvention::kAdditiveNegInf};  // accepted; [0] preferred
  // The structured forms a kDescriptor kernel takes (reference::Describe); a case
  // they cannot express is a skip with the reason.
  DescriptorForms descriptor_forms;

  // The contract (DESIGN §5): what the kernel promises where real kernels differ.
  // Defaults are the strict common case. The causal alignment of a causal flag is
  // the flag convention declared in `masks` (top-left j ≤ i, bottom-right
  // j ≤ i + Tk − Tq), the same for single calls and for every session step.
  MaskedRowPolicy masked_rows = MaskedRowPolicy::kZeros;
  // What a padded batch's query row past seqused_q (a pad query handed over in the
  // descriptor) returns, where it differs from masked_rows; nullopt: masked_rows.
  // jax.nn.dot_product_attention gives a row with no visible key the mean of its
  // values (mean-v) but zeroes the rows past query_seq_lengths.
  std::optional<MaskedRowPolicy> pad_query_rows;
  Blocking blocking = Blocking::kFill;
  // NaN/inf in key/value slots no query may read stays out of every visible output
  // (false: it may spread — a hazard, not a failure).
  bool nan_isolation = true;
  std::vector<EncodingKind> encodings = {EncodingKind::kNone};
  std::vector<RopeLayout> rope_layouts = {RopeLayout::kHalfSplit, RopeLayout::kInterleaved};
  std::vector<RopeScaling> rope_scalings = {RopeScaling::kNone};
  bool gqa = true;
  bool softcap = false;
  bool value_dim_differs = true;  // Dv ≠ D allowed
  // Tq > Tk accepted (more queries than keys; bottom-right alignment leaves the
  // first Tq − Tk rows with no key under causal kinds: the masked-row policy).
  bool queries_beyond_keys = false;
  // false: the kernel always scales by 1/√D (no scale argument); Decode keeps scale 0
  bool scale_argument = true;
  // false: no log-n (length-dependent) query scaling for RoPE; Decode keeps it off
  bool rope_log_n = true;
  Accuracy accuracy;              // how it computes: sets its tolerance (cases/accuracy.h)
  ContractSource contract_source = ContractSource::kCode;  // set by the plugin table and the process hello

  // limits of the shapes Decode draws (also `attncheck bench --max-*`)
  int max_batch = 3;
  int max_heads = 4;
  // > max_heads: one case in 32 draws a head count that is not a power of two from
  // kManyHeadCounts (6, 12, 20, 24, 40, as real models have), up to this; 0: none.
  // An opt-in, so the draws of every adapter that does not set it stay the same.
  int many_heads = 0;
  int max_tokens = 40;
  int max_head_dim = 32;
  // Shape constraints on the head dim D of q and k (cases/head_dims.h): D a multiple
  // of head_dim_multiple (0 or 1: any), and one of head_dims when that is not empty.
  int head_dim_multiple = 1;
  std::vector<int> head_dims;
  int max_position = 70000;  // largest logical position drawn
  SizeTier size_tier;        // large shapes drawn in a share of cases (none by default)
  // The kernel's tile lengths along Tq and Tk (FlashAttention's block_m and block_n,
  // a CPU kernel's row and key blocks): a share of cases (kTileEdgePercent) drawn with
  // Tk, and Tq, at a multiple of one of them or one off, where tail-tile bugs live
  // (cases/size_tier.h DrawTileEdges). Empty: none (the draws stay what they were).
  std::vector<int> tile_sizes;
};

// The descriptor layouts a kernel with `forms` takes, the one kAuto gives first
// (varlen when declared). The padded batch needs no form, unless the kernel is
// varlen-only; kRagged is listed apart only when the kernel also takes leftpad_k
// (without it, a left-padded row is always handed with its keys moved to slot 0).
inline std::vector<DescriptorLayout> DeclaredLayouts(const DescriptorForms& forms) {
  std::vector<DescriptorLayout> layouts;
  if (forms.varlen) layouts.push_back(DescriptorLayout::kVarlen);
  if (!forms.varlen || forms.seqused_q || forms.seqused_k || forms.leftpad_k) layouts.push_back(DescriptorLayout::kPadded);
  if (forms.seqused_k && forms.leftpad_k) layouts.push_back(DescriptorLayout::kRagged);
  return layouts;
}

// Every page size a paged kernel takes, page_size first (none when not paged).
inline std::vector<int> DeclaredPageSizes(const DescriptorForms& forms) {
  if (!forms.paged) return {};
  std::vector<int> sizes{forms.page_size};
  sizes.insert(sizes.end(), forms.more_page_sizes.begin(), forms.more_page_sizes.end());
  return sizes;
}

}  // namespace attncheck
