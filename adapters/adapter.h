// The Adapter interface (DESIGN §5): a kernel under test declares what it owns and
// expects, then runs. Tensors cross the interface as float32 buffers whose values
// are already representable in the case dtype (the adapter stores them in its own
// dtype); the harness (adapters/harness.h) fills the buffers, converts the
// visibility into the adapter's declared mask convention, runs the reference for
// stages the adapter does not own, and guards every buffer with NaN margins.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>

#include "cases/capabilities.h"
#include "cases/case.h"
#include "cases/kernel_spec.h"

namespace attncheck {

// The mask as handed to an adapter, in the convention it declared.
struct MaskArgs {
  MaskConvention convention = MaskConvention::kAdditiveNegInf;
  std::span<const float> additive;   // [B, Tq, Tk] for additive conventions, else empty
  std::span<const uint8_t> boolean;  // [B, Tq, Tk] for bool conventions, else empty
  // causal-flag conventions carry no tensor: the kernel applies the pattern itself
  const VisibilityDescriptor* descriptor = nullptr;  // kDescriptor: the call's descriptor
};

// Every call carries only what a real kernel is told: shapes, the KernelSpec
// (dtype, softcap, encoding, heads, dims, weights seed), scale, positions, the
// mask or descriptor, and tensors — never the case's rows, documents, padding or
// visibility kind.
// Tensor layouts of a descriptor call (include/attncheck/adapter.h, "Tensor
// layouts"; adapters/packing.h builds them). Varlen (descriptor->varlen(), as
// flash_attn_varlen_func): batch 1 and the token axis is the packed one, tq and tk
// the totals cu_seqlens_q/k.back(): q [1, Hq, total_q, D], k [1, Hkv, total_k, D],
// v [1, Hkv, total_k, Dv], positions [1, total], out [1, Hq, total_q, Dv]. Paged
// (descriptor->paged.page_size > 0, as flash_attn_with_kvcache's block_table): k
// [num_pages, Hkv, page_size, D] and v [num_pages, Hkv, page_size, Dv], sequence
// s's key slot j (padded batch: the slot, left pad included, as cache_leftpad;
// varlen: the index in the sequence) at page block_table[s, j / page_size], offset j % page_size; unused
// pages and slots hold NaN; tk and key_positions stay on the logical key axis.
// Otherwise, and in sessions (always a padded KV cache), the shapes below.
struct AttentionArgs {
  KernelSpec spec;
  int batch = 0, q_heads = 0, kv_heads = 0, tq = 0, tk = 0, head_dim = 0, value_dim = 0;
  std::span<const float> q;  // [B, Hq, Tq, D]
  std::span<const float> k;  // [B, Hkv, Tk, D]
  std::span<const float> v;  // [B, Hkv, Tk, Dv]
  std::span<const int> query_positions;  // [B, Tq] logical positions
  std::span<const int> key_positions;    // [B, Tk]
  MaskArgs mask;
  // true: apply the case's q/k encoding (RoPE, xPos, sinusoidal, learned) from the
  // positions; false: q and k arrive already encoded by the harness.
  bool apply_positional = false;
  // true: add the case's score bias (ALiBi, T5, KERPLE, Sandwich); false: it is
  // already folded into the additive mask (or the case has none).
  bool apply_bias = false;
  double scale = 0.0;  // the effective scale (never 0 here)
  int current_length = 0;  // sequence length dynamic scalings see
  std::span<float> out;  // [B, Hq, Tq, Dv]
};

struct RopeArgs {
  KernelSpec spec;
  int batch = 0, heads = 0, tokens = 0, head_dim = 0;
  std::span<const float> x;          // [B, H, T, D]
  std::span<const int> positions;    // [B, T]
  int current_length = 0;
  std::span<float> out;              // [B, H, T, D]
};

// A cached-decode session over one batch: keys and values are appended in chunks
// at given logical positions; queries attend to every key appended so far.
class Session {
 public:
  virtual ~Session() = default;
  // k [B, Hkv, n, D] and v [B, Hkv, n, Dv] of n new tokens at positions [B, n]
  // (not yet encoded when the adapter owns the positional stage).
  virtual void append(std::span<const float> k, std::span<const float> v,
                      std::span<const int> positions, int n) = 0;
  // q [B, Hq, tq, D] at positions [B, tq] against all Tk keys so far; mask
  // [B, tq, Tk] in the adapter's convention; out [B, Hq, tq, Dv].
  virtual void attend(std::span<const float> q, std::span<const int> positions, int tq,
                      const MaskArgs& mask, std::span<float> out) = 0;
};

struct SessionArgs {
  KernelSpec spec;
  int batch = 0, q_heads = 0, kv_heads = 0, head_dim = 0, value_dim = 0;
  bool apply_positional = false;
  bool apply_bias = false;
  double scale = 0.0;
  int current_length = 0;
};

// The backward pass of one attention call (Capabilities::has_backward), a second
// call on the same case (DESIGN §5, "Calls are named tensors"): the forward's
// inputs as AttentionArgs hands them, with q and k always already encoded
// (forward.apply_positional is false: the gradients are those of the q and k the
// attention core reads) and forward.out empty; the upstream gradient dO of the
// output; optionally (Capabilities::backward_saved) the forward's saved output and
// log-sum-exp; the gradients to write. With GQA, dk and dv of a kv head sum over
// every query head that reads it. A row with no visible key has no gradient: dq is
// 0 there and the row adds nothing to dk or dv (the masked-row policy is the
// forward's; the softcap's derivative is part of the pass). The padded layout, or
// the varlen one for a kernel declaring DescriptorForms::varlen_backward (the
// tensors on the packed token axes, as AttentionArgs hands them); never pages.
struct BackwardArgs {
  AttentionArgs forward;         // q, k, v, positions, mask, scale, spec; out empty
  std::span<const float> dout;   // "dout" [B, Hq, Tq, Dv]
  std::span<float> dq;           // "dq" [B, Hq, Tq, D]
  std::span<float> dk;           // "dk" [B, Hkv, Tk, D]
  std::span<float> dv;           // "dv" [B, Hkv, Tk, Dv]
  // "lse" [B, Hq, Tq] when Capabilities::backward_lse, else empty: the natural log of
  // the row's softmax denominator, log Σ_j exp(s_ij) over its visible keys of the
  // scores the softmax reads (scaled, softcapped, biased; no max subtracted). A row
  // with no visible key gets any value (−inf, +inf, …: it is not checked), but is written.
  std::span<float> lse;
  // "saved_out" [B, Hq, Tq, Dv] and "saved_lse" [B, Hq, Tq] when
  // Capabilities::backward_saved, else empty: what a correct forward of this case
  // saves, as FlashAttention's backward takes out and softmax_lse. saved_out is the
  // reference forward's output (double) rounded to the case dtype (the masked-row
  // value 0 on a row with no visible key); saved_lse is the reference's log-sum-exp
  // as defined for "lse" above, rounded to f32 whatever the dtype (FlashAttention
  // keeps softmax_lse in f32). A row with no visible key carries +inf there, as
  // FlashAttention's forward writes it (P = exp(s − lse) is then 0 without a branch),
  // but the value is no promise: a backward must not read it for such a row. Inputs:
  // the harness checks they are not written.
  std::span<const float> saved_out;
  std::span<const float> saved_lse;
};

class Adapter {
 public:
  virtual ~Adapter() = default;
  virtual std::string name() const = 0;
  virtual std::string description() const = 0;  // one line for `attncheck list`
  virtual Capabilities capabilities() const = 0;
  // A reason this case cannot run (SKIP, never pass), beyond what the
  // capabilities already say; nullopt when supported.
  virtual std::optional<std::string> unsupported(const Case&) const { return std::nullopt; }
  virtual void attention(const AttentionArgs& args) = 0;
  // Rotation alone (Capabilities::has_rope_stage).
  virtual void rope(const RopeArgs&) {}
  // Cached decode (Capabilities::has_session).
  virtual std::unique_ptr<Session> open_session(const SessionArgs&) { return nullptr; }
  // The backward pass (Capabilities::has_backward).
  virtual void backward(const BackwardArgs&) {}
};

}  // namespace attncheck
