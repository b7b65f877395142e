// The `eigen` adapter: a float32 attention kernel a user could copy. Per (batch,
// head): S = scale·Q·Kᵀ as an Eigen matrix product, softcap, a fused additive mask,
// row softmax with the max trick, O = P·V; GQA; RoPE in float (both layouts,
// partial rotary, every scaling); a KV-cache session of rotated keys. Visibility
// comes as a dense mask or as a padded-batch descriptor (causal, window, seqused,
// leftpad, prefix, chunk), turned into the same additive mask.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include "adapters/adapter.h"
#include "adapters/descriptor_rule.h"

namespace attncheck {

std::unique_ptr<Adapter> MakeEigenAdapter();

// The pieces of the eigen kernel, for adapters built on it (adapters/mutants/).
// Row-major float buffers; each behaves exactly as inside the `eigen` adapter.

// The mask as additive float [size] (size = B·Tq·Tk): bool conventions become
// 0 / −inf; an additive convention's fill becomes −inf; any other value (0, a
// folded score bias) is kept; a (padded-batch) descriptor is read as
// adapters/descriptor_rule.h reads it, with `slips` (the descriptor mutants').
// Throws std::invalid_argument for causal flags.
std::vector<float> EigenAdditiveMask(const MaskArgs& mask, size_t size, const adapters::DescriptorSlips& slips = {});

// One (batch, head): q [Tq, D], k [Tk, D], v [Tk, Dv] and an additive mask
// [Tq, Tk] (−inf = blocked) → out [Tq, Dv]. A row with no visible key gets 0.
void EigenAttendHead(const float* q, const float* k, const float* v, const float* mask, int tq, int tk,
                     int head_dim, int value_dim, float scale, float softcap, float* out);

// The head computation's two paths: kPortable, the Eigen (SSE) code; kAvx2, raw
// AVX2+FMA (adapters/eigen/avx2_head.h), chosen at start-up where the CPU has both.
enum class EigenPath { kPortable, kAvx2 };
EigenPath ActiveEigenPath();
bool EigenPathAvailable(EigenPath path);

// Runs the kernel on `path` for the scope (tests); throws std::invalid_argument
// where the CPU lacks it. Not for use while other threads run the kernel.
class ScopedEigenPath {
 public:
  explicit ScopedEigenPath(EigenPath path);
  ~ScopedEigenPath();
  ScopedEigenPath(const ScopedEigenPath&) = delete;
  ScopedEigenPath& operator=(const ScopedEigenPath&) = delete;

 private:
  EigenPath previous_;
};

// One defect of a backward pass each (the backward mutants', adapters/mutants/); all
// off: the correct backward.
struct BackwardSlips {
  bool dkdv_unmasked = false;           // dK, dV from P over every key of the row, the mask ignored
  bool dq_unmasked = false;             // dQ from P over every key of the row, the mask ignored
  adapters::DescriptorSlips descriptor{};  // the descriptor read with these slips in the backward only
  enum class KvSum { kGroup, kFirstHeadOnly, kModulo };
  KvSum kv_sum = KvSum::kGroup;         // dK, dV of kv head g: its group's sum / first head only / heads h % Hkv = g
  bool softcap_derivative_missing = false;  // dZ = dS, tanh′ forgotten
  bool empty_rows_nan = false;          // a row with no visible key normalises by 0: NaN gradients
  int lse_row_shift = 0;                // P recomputed from the log-sum-exp of row i + shift (mod Tq)
                                        // (the saved one, BackwardArgs::saved_lse, where handed over)
  bool reported_lse_unmasked = false;   // the "lse" written (backward_lse) over every key, the mask forgotten
};

// The backward of the eigen kernel (Adapter::backward), plain loops in float over
// each row's visible keys only (a blocked key's NaN never meets a 0 weight):
//   P from S = scale·q·k (softcap) + M and the row's log-sum-exp; dV += P·dO;
//   dP = dO·v; δ = dO·O; dS = P (dP − δ); dZ = dS (1 − tanh²) with softcap;
//   dQ = scale·Σ dZ k; dK += scale·dZ q. A row with no visible key: no gradient.
// The eigen adapter recomputes the log-sum-exp; where args.saved_lse is handed over
// (a mutant declaring Capabilities::backward_saved), P is recomputed from it instead.
void EigenBackward(const BackwardArgs& args, const BackwardSlips& slips = {});

// RoPE of x [B, H, T, D] in place at positions [B, T], in float: the case's
// layout, rotary dim and scaling (frequencies for `current_length`), and for
// queries the log-n scale. Throws std::invalid_argument unless the spec is RoPE.
void EigenRotate(const KernelSpec& c, int current_length, std::span<float> x, int batch, int heads, int tokens,
                 std::span<const int> positions, bool query);

}  // namespace attncheck
