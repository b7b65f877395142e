/* A correct attention kernel in plain C, behind the attncheck plugin ABI
 * (include/attncheck/adapter.h). Copy it and replace the kernel with yours; the
 * walkthrough is README.md next to this file.
 *
 * Per (batch b, query head h), kv head h / (Hq / Hkv):
 *   s_ij = scale · q_i · k_j             (float accumulation)
 *   s_ij = c · tanh(s_ij / c)           (softcap c > 0)
 *   s_ij = s_ij + m_ij                   additive mask (the convention's fill: key j skipped outright)
 *   out_i = Σ_j e^(s_ij − max) v_j / Σ_j e^(s_ij − max)  over visible j only;
 *   a row with no visible key is 0 (declared masked-row policy: zeros).
 * Blocked keys are never read, so NaN or huge values in masked K/V cannot leak.
 * RoPE (both layouts, partial rotary, no / linear scaling, log-n query scaling) is
 * applied in float, and the rotated q and k are rounded back to the storage dtype
 * (f32, f16 or bf16) as a separate rope kernel writing the KV cache would.
 * It also implements the rotation alone (rope stage), a cached-decode session and
 * the backward pass (dQ, dK, dV; ABI 2.1).
 *
 * The same source builds the defect variants the tests use (one -D flag each):
 *   EXAMPLE_DEFECT_OFF_BY_ONE  the causal flag lets each query see one key too many
 *   EXAMPLE_DEFECT_NAN         rows with more than 16 keys come out NaN
 *   EXAMPLE_DEFECT_MASK_ROW0   reads a bool-visible mask from batch row 0 for every batch row
 *   EXAMPLE_DEFECT_SEGFAULT    writes through a null pointer when Tk > 16
 *   EXAMPLE_DEFECT_HANG        loops forever when Tk > 16
 *   EXAMPLE_MALFORMED_ABI      declares ABI version 2
 *   EXAMPLE_MALFORMED_NO_ATTENTION  leaves the mandatory attention() out of the table
 *   EXAMPLE_MALFORMED_NO_ENTRY      exports no entry point at all
 *   EXAMPLE_MALFORMED_CAPS          prefers a mask convention that does not exist
 *   EXAMPLE_NO_ROPE                 declares neither RoPE nor a rope stage (the harness rotates)
 *   EXAMPLE_ABI_1_0                 an ABI 1.0 table (struct_size ends before the contract)
 *   EXAMPLE_DESCRIPTOR              ABI 2 descriptor mode: takes only the visibility descriptor
 *                                   (FlashAttention's padded-batch forms) and D % 8 == 0
 *   EXAMPLE_VARLEN                  (with EXAMPLE_DESCRIPTOR) FlashAttention's varlen forms instead:
 *                                   packed sequences through cu_seqlens_q/k (flash_attn_varlen_func)
 *   EXAMPLE_PAGED                   (with EXAMPLE_DESCRIPTOR, with or without EXAMPLE_VARLEN) also the
 *                                   paged form, page size 16 (and 1 and 7 from ABI 2.4's
 *                                   more_page_sizes): K/V read through the block table
 *                                   (flash_attn_with_kvcache's block_table)
 *   EXAMPLE_DEFECT_BLOCK_TABLE_ROW0 (with EXAMPLE_PAGED) reads row 0 of the block table for every sequence
 *   EXAMPLE_DEFECT_PAGED_AFTER_LEFTPAD (with EXAMPLE_PAGED) pages key j counted after the left pad, not the
 *                                   slot (the harness and cache_leftpad page the slot)
 *   EXAMPLE_DEFECT_EMPTY_ROW_NAN    a row with no visible key divides 0 by 0 (NaN) where its policy says 0
 *   EXAMPLE_DEFECT_ALIBI_SLOT       (with EXAMPLE_DESCRIPTOR) measures the ALiBi distance from the key slot,
 *                                   left pad included, instead of the key's index
 *   EXAMPLE_HEAD_DIM_MULTIPLE_8     declares D % 8 == 0 and fails any other head dim
 *   EXAMPLE_REFUSE_LONG             refuses (ATTNCHECK_REFUSED) every call with more than 16 keys
 *   EXAMPLE_MALFORMED_FORMS         (with EXAMPLE_DESCRIPTOR) declares a descriptor form that does not exist
 *   EXAMPLE_MALFORMED_PAGE_SIZE     (with EXAMPLE_DESCRIPTOR) takes the paged form with page size 0
 *   EXAMPLE_MALFORMED_OWNS_BIAS     owns its score bias while taking dense masks (no descriptor to carry it)
 *   EXAMPLE_MALFORMED_HEAD_DIMS     lists a head dim that is not a multiple of its head_dim_multiple
 *   EXAMPLE_MALFORMED_TILE_SIZES    lists a negative tile length (ABI 2.3)
 *   EXAMPLE_MALFORMED_MORE_PAGE_SIZES (with EXAMPLE_PAGED) lists page_size 16 again among its further
 *                                   page sizes (ABI 2.4)
 *   EXAMPLE_MALFORMED_PROMISE       promises session_rope_as_call 2, not 0 or 1 (ABI 2.5)
 *   EXAMPLE_TILE_SIZES              declares key blocks of 16 (ABI 2.3 tile_sizes): the case
 *                                   lengths drawn at tile edges reach it
 *   EXAMPLE_MALFORMED_NO_ATTEND_V2  (with EXAMPLE_DESCRIPTOR) has sessions but no session_attend_v2
 *   EXAMPLE_DEFECT_BACKWARD_MASK    the backward leaves the mask out of dK/dV: a blocked key gets
 *                                   P = e^(s - lse) from its raw score, as in Triton's fused-attention
 *                                   tutorial (the forward and dQ stay right)
 *   EXAMPLE_MALFORMED_NO_BACKWARD   declares has_backward with no backward() in the table
 *   EXAMPLE_MALFORMED_BACKWARD_SIZE a struct_size that covers has_backward but not backward()
 * Built against the ABI 1 header (tests/fixtures/abi_v1) it is an ABI 1 plugin:
 * the ABI 2 parts sit under #if ATTNCHECK_ABI_VERSION >= 2. Built against the ABI
 * 2.0 header (tests/fixtures/abi_v2_0) it is a 2.0 plugin without the backward
 * (ABI 2.1, under #if EXAMPLE_HAS_BACKWARD): every mode but paged has one (dense
 * masks, causal flags, the descriptor's padded batch, and varlen on the packed token
 * axis as the forward); the paged builds declare none, as FlashAttention has no paged
 * backward (and backward() refuses pages, should it be asked). */
#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncheck/adapter.h"

/* ABI 2.1 (the backward call) when the header has it; built against an older header
 * (tests/fixtures/abi_v1, abi_v2_0) the plugin has no backward and a smaller table. */
#if ATTNCHECK_ABI_VERSION > 2 || (ATTNCHECK_ABI_VERSION == 2 && defined(ATTNCHECK_ABI_MINOR_VERSION))
#define EXAMPLE_HAS_BACKWARD 1
#else
#define EXAMPLE_HAS_BACKWARD 0
#endif
/* ABI 2.2 (the saved forward inputs of the backward) when the header has it; built
 * against the 2.1 header (tests/fixtures/abi_v2_1) the backward recomputes O. */
#if EXAMPLE_HAS_BACKWARD && ATTNCHECK_ABI_MINOR_VERSION >= 2
#define EXAMPLE_HAS_SAVED 1
#else
#define EXAMPLE_HAS_SAVED 0
#endif
/* ABI 2.3 (tile_sizes) when the header has it; built against the 2.2 header
 * (tests/fixtures/abi_v2_2) the table ends at backward_saved. */
#if EXAMPLE_HAS_SAVED && ATTNCHECK_ABI_MINOR_VERSION >= 3
#define EXAMPLE_HAS_TILES 1
#else
#define EXAMPLE_HAS_TILES 0
#endif
/* ABI 2.4 (more_page_sizes) when the header has it; built against the 2.3 header
 * (tests/fixtures/abi_v2_3) the table ends at tile_sizes and is paged at 16 alone. */
#if EXAMPLE_HAS_TILES && ATTNCHECK_ABI_MINOR_VERSION >= 4
#define EXAMPLE_HAS_PAGE_SIZES 1
#else
#define EXAMPLE_HAS_PAGE_SIZES 0
#endif
/* ABI 2.5 (the contract promises session_rope_as_call, backward_order_varies) when the
 * header has them; built against the 2.4 header (tests/fixtures/abi_v2_4) the table ends
 * at more_page_sizes and promises neither. */
#if EXAMPLE_HAS_PAGE_SIZES && ATTNCHECK_ABI_MINOR_VERSION >= 5
#define EXAMPLE_HAS_PROMISES 1
#else
#define EXAMPLE_HAS_PROMISES 0
#endif

/* ------------------------------------------------------------------------- */
/* Storage types: f16 and bf16 as uint16_t, converted with round-to-nearest-even. */

static float half_to_float(uint16_t h) {
  const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
  uint32_t bits;
  float f;
  if (exponent == 0) { /* zero or subnormal: mantissa · 2^-24 */
    f = ldexpf((float)mantissa, -24);
    return sign ? -f : f;
  }
  if (exponent == 31) {
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else {
    bits = sign | ((exponent - 15 + 127) << 23) | (mantissa << 13);
  }
  memcpy(&f, &bits, sizeof f);
  return f;
}

static uint16_t float_to_half(float f) {
  uint32_t x, magnitude, mantissa, rest, h;
  uint16_t sign;
  memcpy(&x, &f, sizeof x);
  sign = (uint16_t)((x >> 16) & 0x8000u);
  magnitude = x & 0x7fffffffu;
  if (magnitude >= 0x7f800000u) return sign | (magnitude > 0x7f800000u ? 0x7e00u : 0x7c00u);
  if (magnitude >= 0x477ff000u) return sign | 0x7c00u; /* ≥ 65520 rounds to inf */
  if (magnitude < 0x38800000u) {                        /* below 2^-14: subnormal half */
    float a;
    memcpy(&a, &magnitude, sizeof a);
    return sign | (uint16_t)rintf(a * 16777216.0f); /* units of 2^-24, ties to even */
  }
  mantissa = magnitude & 0x7fffffu;
  h = ((((magnitude >> 23) - 127 + 15)) << 10) | (mantissa >> 13);
  rest = mantissa & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h; /* a carry moves into the exponent */
  return sign | (uint16_t)h;
}

static float bf16_to_float(uint16_t b) {
  const uint32_t bits = (uint32_t)b << 16;
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

static uint16_t float_to_bf16(float f) {
  uint32_t x;
  memcpy(&x, &f, sizeof x);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u); /* quiet NaN */
  return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

/* A value as the storage dtype would hold it. */
static float round_to(int32_t dtype, float f) {
  if (dtype == ATTNCHECK_DTYPE_F16) return half_to_float(float_to_half(f));
  if (dtype == ATTNCHECK_DTYPE_BF16) return bf16_to_float(float_to_bf16(f));
  return f;
}

static int64_t offset(const attncheck_tensor* t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
  return i0 * t->strides[0] + i1 * t->strides[1] + i2 * t->strides[2] + i3 * t->strides[3];
}

static float load(const attncheck_tensor* t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
  const int64_t at = offset(t, i0, i1, i2, i3);
  switch (t->dtype) {
    case ATTNCHECK_DTYPE_F16: return half_to_float(((const uint16_t*)t->data)[at]);
    case ATTNCHECK_DTYPE_BF16: return bf16_to_float(((const uint16_t*)t->data)[at]);
    default: return ((const float*)t->data)[at];
  }
}

static void store(const attncheck_tensor* t, int64_t i0, int64_t i1, int64_t i2, int64_t i3, float value) {
  const int64_t at = offset(t, i0, i1, i2, i3);
  switch (t->dtype) {
    case ATTNCHECK_DTYPE_F16: ((uint16_t*)t->data)[at] = float_to_half(value); break;
    case ATTNCHECK_DTYPE_BF16: ((uint16_t*)t->data)[at] = float_to_bf16(value); break;
    default: ((float*)t->data)[at] = value; break;
  }
}

static int32_t load_position(const attncheck_tensor* t, int64_t b, int64_t i) {
  return ((const int32_t*)t->data)[offset(t, b, i, 0, 0)];
}

/* ------------------------------------------------------------------------- */
/* Errors: one message per instance, read back through last_error(). */

typedef struct instance {
  char error[256];
} instance;

static char no_instance_error[256];

static int fail(void* self, const char* format, ...) {
  char* buffer = self ? ((instance*)self)->error : no_instance_error;
  va_list args;
  va_start(args, format);
  vsnprintf(buffer, 256, format, args);
  va_end(args);
  return 1;
}

static void* create(void) { return calloc(1, sizeof(instance)); }
static void destroy(void* self) { free(self); }
static const char* last_error(void* self) { return self ? ((instance*)self)->error : no_instance_error; }

/* ------------------------------------------------------------------------- */
/* RoPE in float: theta_k = base^(-2k/rotary_dim) (÷ factor when linear),
 * angle = float(p)·float(theta_k), pairs (2k, 2k+1) or (k, k + rotary_dim/2). */

static int rope_supported(void* self, const attncheck_rope_spec* rope, int32_t head_dim) {
  if (rope->scaling != ATTNCHECK_ROPE_SCALING_NONE && rope->scaling != ATTNCHECK_ROPE_SCALING_LINEAR) {
    return fail(self, "RoPE scaling %d not implemented", rope->scaling);
  }
  if (rope->rotary_dim <= 0 || rope->rotary_dim > head_dim || rope->rotary_dim % 2 != 0) {
    return fail(self, "rotary_dim %d invalid for head_dim %d", rope->rotary_dim, head_dim);
  }
  return 0;
}

/* x [head_dim] of one token at `position`, in place. */
static void rotate(const attncheck_rope_spec* rope, float* x, int32_t position, int query) {
  const int half = rope->rotary_dim / 2;
  const float p = (float)position;
  int k;
  for (k = 0; k < half; ++k) {
    double theta_k = pow(rope->base, -2.0 * k / rope->rotary_dim);
    if (rope->scaling == ATTNCHECK_ROPE_SCALING_LINEAR) theta_k /= rope->factor;
    {
      const int a = rope->layout == ATTNCHECK_ROPE_INTERLEAVED ? 2 * k : k;
      const int b = rope->layout == ATTNCHECK_ROPE_INTERLEAVED ? 2 * k + 1 : k + half;
      const float angle = p * (float)theta_k;
      const float c = cosf(angle), s = sinf(angle);
      const float xa = x[a], xb = x[b];
      x[a] = xa * c - xb * s;
      x[b] = xa * s + xb * c;
    }
  }
  (void)query;
}

/* The query's log-n scale max(1, ln(p+1)/ln(L)) when the spec asks for it. */
static float log_n_scale(const attncheck_rope_spec* rope, int32_t position) {
  double scale;
  if (!rope->log_n || rope->original_context <= 1) return 1.0f;
  scale = log((double)position + 1.0) / log((double)rope->original_context);
  return (float)(scale > 1.0 ? scale : 1.0);
}

/* Token (i0, i1, t) of a [B, H, T, D] tensor into float, rotated when asked and
 * rounded to the storage dtype. */
static void load_token(const attncheck_tensor* t, int64_t b, int64_t h, int64_t token, int32_t dim,
                       const attncheck_rope_spec* rope, int apply_rope, int32_t position, int query, float* x) {
  int d;
  for (d = 0; d < dim; ++d) x[d] = load(t, b, h, token, d);
  if (!apply_rope) return;
  rotate(rope, x, position, query);
  if (query) {
    const float scale = log_n_scale(rope, position);
    for (d = 0; d < dim; ++d) x[d] *= scale;
  }
  for (d = 0; d < dim; ++d) x[d] = round_to(t->dtype, x[d]);
}

/* ------------------------------------------------------------------------- */
/* The kernel: one (b, h) at a time over float copies of its q, k, v rows. */

/* The value an additive convention marks a blocked key with, in the mask's dtype
 * (-1e9 becomes -inf in f16). Any other value (0, or a score bias the harness
 * folded in) is added to the score. */
static float additive_fill(int32_t convention, int32_t dtype) {
  switch (convention) {
    case ATTNCHECK_MASK_ADDITIVE_LOWEST:
      return dtype == ATTNCHECK_DTYPE_F16 ? -65504.0f : dtype == ATTNCHECK_DTYPE_BF16 ? bf16_to_float(0xff7fu) : -FLT_MAX;
    case ATTNCHECK_MASK_ADDITIVE_MINUS_1E4: return round_to(dtype, -1e4f);
    case ATTNCHECK_MASK_ADDITIVE_MINUS_1E9: return round_to(dtype, -1e9f);
    default: return -INFINITY;
  }
}

/* Additive mask value for (b, i, j), or -INFINITY when key j is blocked: a
 * blocked key is excluded outright, never just pushed down by a finite fill
 * (that would leave a fully masked row averaging its masked values). */
static float mask_value(int32_t convention, const attncheck_tensor* mask, float fill, int64_t b, int64_t i,
                        int64_t j, int64_t causal_offset) {
  switch (convention) {
    case ATTNCHECK_MASK_ADDITIVE_NEG_INF:
    case ATTNCHECK_MASK_ADDITIVE_LOWEST:
    case ATTNCHECK_MASK_ADDITIVE_MINUS_1E4:
    case ATTNCHECK_MASK_ADDITIVE_MINUS_1E9: {
      const float m = load(mask, b, i, j, 0);
      return m == fill ? -INFINITY : m;
    }
    case ATTNCHECK_MASK_BOOL_VISIBLE:
#ifdef EXAMPLE_DEFECT_MASK_ROW0
      b = 0; /* every batch row reads row 0's mask */
#endif
      return ((const uint8_t*)mask->data)[offset(mask, b, i, j, 0)] ? 0.0f : -INFINITY;
    case ATTNCHECK_MASK_BOOL_BLOCKED:
      return ((const uint8_t*)mask->data)[offset(mask, b, i, j, 0)] ? -INFINITY : 0.0f;
    default: /* causal flags: top-left offset 0, bottom-right Tk − Tq */
#ifdef EXAMPLE_DEFECT_OFF_BY_ONE
      return j <= i + causal_offset + 1 ? 0.0f : -INFINITY;
#else
      return j <= i + causal_offset ? 0.0f : -INFINITY;
#endif
  }
}

#if ATTNCHECK_ABI_VERSION >= 2
static int64_t floor_div(int64_t a, int64_t c) { return a >= 0 ? a / c : -((-a + c - 1) / c); }

/* Key slot `slot` visible to query row i of batch row b under the descriptor,
 * FlashAttention's rule (block_info.h, mask.h) over a padded batch of Tq rows and
 * Tk slots: the row's keys are slots [leftpad_k, seqused_k), its real queries rows
 * [0, seqused_q); query i's diagonal is i (top-left) or i + nk - nq (bottom-right).
 * Varlen (batch 1, packed axes): query i and key `slot` must be of one sequence s,
 * [cu_seqlens_q[s], cu_seqlens_q[s+1]) and [cu_seqlens_k[s], cu_seqlens_k[s+1]). */
static int descriptor_sees(const attncheck_visibility* v, int32_t tq, int32_t tk, int64_t b, int64_t i, int64_t slot,
                           int64_t* distance) {
  int64_t nq = v->seqused_q ? v->seqused_q[b] : tq;
  int64_t left_pad = v->leftpad_k ? v->leftpad_k[b] : 0;
  int64_t nk = (v->seqused_k ? v->seqused_k[b] : tk) - left_pad;
  int64_t prefix = v->prefix_len ? v->prefix_len[b] : 0;
  int64_t j = slot - left_pad;
  int64_t diagonal;
  if (v->cu_seqlens_q) {
    int64_t s = 0;
    while (s < v->num_sequences && i >= v->cu_seqlens_q[s + 1]) ++s;
    if (s == v->num_sequences || slot < v->cu_seqlens_k[s] || slot >= v->cu_seqlens_k[s + 1]) return 0;
    nq = v->cu_seqlens_q[s + 1] - v->cu_seqlens_q[s];
    nk = v->cu_seqlens_k[s + 1] - v->cu_seqlens_k[s];
    prefix = v->prefix_len ? v->prefix_len[s] : 0;
    i -= v->cu_seqlens_q[s];
    j = slot - v->cu_seqlens_k[s];
  }
  if (i >= nq || j < 0 || j >= nk) return 0;
  diagonal = v->causal == 1 ? i : i + nk - nq;
#ifdef EXAMPLE_DEFECT_ALIBI_SLOT
  *distance = diagonal - slot; /* measures from the key slot, left pad included */
#else
  *distance = diagonal - j; /* ALiBi: the key's index in its sequence, as the diagonal */
#endif
  if (diagonal >= 0 && diagonal < prefix && j < prefix) return 1; /* prefix-LM */
  if (v->causal != 0 && j > diagonal) return 0;
  if (v->window_left >= 0 && j < diagonal - v->window_left) return 0;
  if (v->window_right >= 0 && j > diagonal + v->window_right) return 0;
  return v->chunk <= 0 || floor_div(j, v->chunk) == floor_div(diagonal, v->chunk);
}
/* Kernel-owned ALiBi slope of query head h of `heads` (0 without ALiBi): the
 * descriptor's slopes, or ggml's max_bias form (m = 2^floor(log2 heads): head h < m
 * gets 2^(-max_bias/m)^(h+1), the rest 2^(-max_bias/2m)^(2(h-m)+1)). */
static double alibi_slope(const attncheck_visibility* v, int32_t h, int32_t heads) {
  int32_t m = 1;
  if (!v) return 0.0;
  if (v->alibi_slopes) return v->alibi_slopes[h];
  if (v->alibi_max_bias <= 0.0) return 0.0;
  while (m * 2 <= heads) m *= 2;
  return h < m ? pow(2.0, -v->alibi_max_bias / m * (h + 1)) : pow(2.0, -v->alibi_max_bias / (2.0 * m) * (2 * (h - m) + 1));
}
/* Paged K/V (page_size > 0): the page and offset of key slot `slot` of batch row b,
 * through the block table. Its sequence s is row b (padded batch, slots below
 * seqused_k) or the varlen sequence holding the packed slot; j is the key's index
 * in it. 0 when the slot is in no sequence: no key there, nothing to read. */
static int paged_slot(const attncheck_visibility* v, int32_t tk, int64_t b, int64_t slot, int64_t* page,
                      int64_t* at) {
  int64_t s = b, j = slot;
  if (v->cu_seqlens_k) {
    for (s = 0; s < v->num_sequences && slot >= v->cu_seqlens_k[s + 1]; ++s) {
    }
    if (s == v->num_sequences) return 0;
    j = slot - v->cu_seqlens_k[s];
  } else if (slot >= (v->seqused_k ? v->seqused_k[b] : tk)) {
    return 0;
  }
#ifdef EXAMPLE_DEFECT_PAGED_AFTER_LEFTPAD
  else if (v->leftpad_k) {
    j = slot - v->leftpad_k[b]; /* counts keys after the left pad, not slots */
    if (j < 0) return 0;
  }
#endif
#ifdef EXAMPLE_DEFECT_BLOCK_TABLE_ROW0
  s = 0; /* every sequence reads sequence 0's pages */
#endif
  *page = v->block_table[s * v->max_blocks + j / v->page_size];
  *at = j % v->page_size;
  return 1;
}
#endif

typedef struct problem {
  int32_t q_heads, tq, tk, head_dim, value_dim;
  double scale, softcap;
  int32_t mask_convention;
  const attncheck_tensor* mask;
  float fill; /* additive conventions: the blocked value */
  int64_t causal_offset;
#if ATTNCHECK_ABI_VERSION >= 2
  const attncheck_visibility* visibility; /* the descriptor convention's, else NULL */
#endif
} problem;

/* The mask value (0, or the descriptor's ALiBi bias -slope * |d(i) - j| with this
 * head's slope) of key j for query i, -INFINITY when j is blocked. */
static float visibility_value(const problem* p, int64_t b, int64_t i, int64_t j, double slope) {
#if ATTNCHECK_ABI_VERSION >= 2
  if (p->visibility) {
    int64_t distance = 0;
    if (!descriptor_sees(p->visibility, p->tq, p->tk, b, i, j, &distance)) return -INFINITY;
    return (float)(-slope * (double)(distance < 0 ? -distance : distance));
  }
#endif
  (void)slope;
  return mask_value(p->mask_convention, p->mask, p->fill, b, i, j, p->causal_offset);
}

/* The checks a kernel makes before it runs: shapes it has no path for. */
static int check_shape(void* self, int32_t head_dim, int32_t tk) {
#ifdef EXAMPLE_HEAD_DIM_MULTIPLE_8
  if (head_dim % 8 != 0) return fail(self, "head dim %d is not a multiple of 8", head_dim);
#endif
#if defined(EXAMPLE_REFUSE_LONG) && ATTNCHECK_ABI_VERSION >= 2
  if (tk > 16) {
    fail(self, "%d keys: this kernel takes at most 16", tk);
    return ATTNCHECK_REFUSED;
  }
#endif
  (void)self;
  (void)head_dim;
  (void)tk;
  return 0;
}

/* Row i's scores into scores[Tk]: s_j = scale · q_i · k_j, softcapped, plus the mask
 * value; -INFINITY for a blocked key (k_j is never read). Returns the row's maximum
 * (-INFINITY: no visible key). */
static float row_scores(const problem* p, const float* q_i, const float* k, int64_t b, int64_t i, double slope,
                        float* scores) {
  float row_max = -INFINITY;
  int32_t j, d;
  for (j = 0; j < p->tk; ++j) {
    const float m = visibility_value(p, b, i, j, slope);
    float s = 0.0f;
    if (m == -INFINITY) {
      scores[j] = -INFINITY;
      continue;
    }
    for (d = 0; d < p->head_dim; ++d) s += q_i[d] * k[(size_t)j * p->head_dim + d];
    s *= (float)p->scale;
    if (p->softcap > 0.0) s = (float)p->softcap * tanhf(s / (float)p->softcap);
    s += m;
    scores[j] = s;
    if (s > row_max) row_max = s;
  }
  return row_max;
}

/* q [Tq][D], k [Tk][D], v [Tk][Dv] in float; writes out[b, h, :, :]. */
static int attend_head(void* self, const problem* p, const float* q, const float* k, const float* v, int64_t b,
                       int64_t h, const attncheck_tensor* out) {
  float* scores = malloc(sizeof(float) * (size_t)(p->tk > 0 ? p->tk : 1));
  float* acc = malloc(sizeof(float) * (size_t)(p->value_dim > 0 ? p->value_dim : 1));
  int32_t i, j, d;
#if ATTNCHECK_ABI_VERSION >= 2
  const double slope = alibi_slope(p->visibility, (int32_t)h, p->q_heads);
#else
  const double slope = 0.0;
#endif
  if (!scores || !acc) {
    free(scores);
    free(acc);
    return fail(self, "out of memory");
  }
#ifdef EXAMPLE_DEFECT_SEGFAULT
  if (p->tk > 16) *(volatile int*)(uintptr_t)0 = 1;
#endif
#ifdef EXAMPLE_DEFECT_HANG
  if (p->tk > 16) {
    volatile int forever = 1;
    while (forever) {
    }
  }
#endif
  for (i = 0; i < p->tq; ++i) {
    const float row_max = row_scores(p, q + (size_t)i * p->head_dim, k, b, i, slope, scores);
    float sum = 0.0f;
    for (d = 0; d < p->value_dim; ++d) acc[d] = 0.0f;
    if (row_max > -INFINITY) {
      for (j = 0; j < p->tk; ++j) {
        float w;
        if (scores[j] == -INFINITY) continue; /* blocked: never read v_j */
        w = expf(scores[j] - row_max);
        sum += w;
        for (d = 0; d < p->value_dim; ++d) acc[d] += w * v[(size_t)j * p->value_dim + d];
      }
      for (d = 0; d < p->value_dim; ++d) acc[d] /= sum;
    }
#ifdef EXAMPLE_DEFECT_EMPTY_ROW_NAN
    else {
      for (d = 0; d < p->value_dim; ++d) acc[d] /= sum; /* 0 / 0 */
    }
#endif
#ifdef EXAMPLE_DEFECT_NAN
    if (p->tk > 16) acc[0] = NAN;
#endif
    for (d = 0; d < p->value_dim; ++d) store(out, b, h, i, d, acc[d]);
  }
  free(scores);
  free(acc);
  return 0;
}

static int check_mask(void* self, int32_t convention) {
  switch (convention) {
    case ATTNCHECK_MASK_ADDITIVE_NEG_INF:
    case ATTNCHECK_MASK_ADDITIVE_LOWEST:
    case ATTNCHECK_MASK_ADDITIVE_MINUS_1E4:
    case ATTNCHECK_MASK_ADDITIVE_MINUS_1E9:
    case ATTNCHECK_MASK_BOOL_VISIBLE:
    case ATTNCHECK_MASK_BOOL_BLOCKED:
    case ATTNCHECK_MASK_CAUSAL_TOP_LEFT:
    case ATTNCHECK_MASK_CAUSAL_BOTTOM_RIGHT: return 0;
#if ATTNCHECK_ABI_VERSION >= 2
    case ATTNCHECK_MASK_DESCRIPTOR: return 0;
#endif
    default: return fail(self, "mask convention %d unknown", convention);
  }
}

/* The checks and the problem of one call (attention() and backward()). */
static int call_problem(void* self, const attncheck_attention_args* a, problem* p) {
  const int rc = check_shape(self, a->head_dim, a->tk);
  if (rc != 0) return rc;
  if (check_mask(self, a->mask_convention)) return 1;
  if (a->apply_rope && rope_supported(self, &a->rope, a->head_dim)) return 1;
  p->q_heads = a->q_heads;
  p->tq = a->tq;
  p->tk = a->tk;
  p->head_dim = a->head_dim;
  p->value_dim = a->value_dim;
  p->scale = a->scale;
  p->softcap = a->softcap;
  p->mask_convention = a->mask_convention;
  p->mask = &a->mask;
  p->fill = additive_fill(a->mask_convention, a->mask.dtype);
  p->causal_offset = a->mask_convention == ATTNCHECK_MASK_CAUSAL_BOTTOM_RIGHT ? a->tk - a->tq : 0;
#if ATTNCHECK_ABI_VERSION >= 2
  p->visibility = a->mask_convention == ATTNCHECK_MASK_DESCRIPTOR ? a->visibility : NULL;
  if (a->mask_convention == ATTNCHECK_MASK_DESCRIPTOR && !p->visibility) {
    return fail(self, "descriptor convention without a descriptor");
  }
  if (p->visibility) p->softcap = p->visibility->softcap; /* the descriptor carries it too */
#endif
  return 0;
}

static int attention(void* self, const attncheck_attention_args* a) {
  const int32_t group = a->kv_heads > 0 ? a->q_heads / a->kv_heads : 1;
  const size_t q_size = (size_t)a->tq * a->head_dim, k_size = (size_t)a->tk * a->head_dim;
  float *q, *k, *v;
  problem p;
  int32_t b, h, t;
  int rc = call_problem(self, a, &p);
  if (rc != 0) return rc;
  q = malloc(sizeof(float) * (q_size ? q_size : 1));
  k = malloc(sizeof(float) * (k_size ? k_size : 1));
  v = malloc(sizeof(float) * ((size_t)a->tk * a->value_dim + 1));
  if (!q || !k || !v) rc = fail(self, "out of memory");
  for (b = 0; b < a->batch && rc == 0; ++b) {
    for (h = 0; h < a->q_heads && rc == 0; ++h) {
      const int32_t kv = h / group; /* GQA */
      for (t = 0; t < a->tq; ++t) {
        load_token(&a->q, b, h, t, a->head_dim, &a->rope, a->apply_rope, load_position(&a->query_positions, b, t), 1,
                   q + (size_t)t * a->head_dim);
      }
      for (t = 0; t < a->tk; ++t) {
        int64_t row = b, at = t; /* where key slot t lives: [B, Hkv, Tk, ·] or a page */
        int32_t d;
#if ATTNCHECK_ABI_VERSION >= 2
        if (p.visibility && p.visibility->page_size > 0 && !paged_slot(p.visibility, a->tk, b, t, &row, &at)) {
          for (d = 0; d < a->head_dim; ++d) k[(size_t)t * a->head_dim + d] = NAN; /* no key: never read */
          for (d = 0; d < a->value_dim; ++d) v[(size_t)t * a->value_dim + d] = NAN;
          continue;
        }
#endif
        load_token(&a->k, row, kv, at, a->head_dim, &a->rope, a->apply_rope, load_position(&a->key_positions, b, t), 0,
                   k + (size_t)t * a->head_dim);
        for (d = 0; d < a->value_dim; ++d) v[(size_t)t * a->value_dim + d] = load(&a->v, row, kv, at, d);
      }
      rc = attend_head(self, &p, q, k, v, b, h, &a->out);
    }
  }
  free(q);
  free(k);
  free(v);
  return rc;
}

/* Rotation alone: out = R(p) x (key side, no log-n), stored in the dtype. */
static int rope(void* self, const attncheck_rope_args* a) {
  float* x = malloc(sizeof(float) * (size_t)(a->head_dim > 0 ? a->head_dim : 1));
  int32_t b, h, t, d;
  if (!x) return fail(self, "out of memory");
  if (rope_supported(self, &a->rope, a->head_dim)) {
    free(x);
    return 1;
  }
  for (b = 0; b < a->batch; ++b)
    for (h = 0; h < a->heads; ++h)
      for (t = 0; t < a->tokens; ++t) {
        load_token(&a->x, b, h, t, a->head_dim, &a->rope, 1, load_position(&a->positions, b, t), 0, x);
        for (d = 0; d < a->head_dim; ++d) store(&a->out, b, h, t, d, x[d]);
      }
  free(x);
  return 0;
}

#if EXAMPLE_HAS_BACKWARD
/* ------------------------------------------------------------------------- */
/* The backward pass (ABI 2.1), per (b, h) in float: recompute row i's scores, P and
 * O = P V (ABI 2.2: O is the saved output handed in, backward_saved), then with
 * δ_i = dO_i · O_i, for each visible key j
 *   dV_j += P_ij dO_i,  dS_ij = P_ij (dO_i · v_j − δ_i),
 *   dZ_ij = dS_ij (1 − tanh²(z_ij / c)) (softcap c; else dS_ij), z_ij = scale q_i · k_j,
 *   dQ_i += scale dZ_ij k_j,  dK_j += scale dZ_ij q_i.
 * A row with no visible key: dQ_i = 0, nothing to dK or dV. dK and dV are summed in
 * float over the query heads of a kv head (GQA) and stored once. */

typedef struct gradients {
  float *q, *k, *v, *dout;   /* this (b, h)'s q [Tq][D] and dO [Tq][Dv]; the kv head's k [Tk][D], v [Tk][Dv] */
  float *dq, *dk, *dv;       /* dq [Tq][D] of the head; dk [Tk][D], dv [Tk][Dv] summed over the group */
  float *scores, *o;         /* scratch: [Tk], [Dv] */
} gradients;

static void backward_head(const problem* p, gradients* g, int64_t b, int64_t h, const attncheck_tensor* lse,
                          const attncheck_tensor* saved_out) {
#if ATTNCHECK_ABI_VERSION >= 2
  const double slope = alibi_slope(p->visibility, (int32_t)h, p->q_heads);
#else
  const double slope = 0.0;
#endif
  int32_t i, j, d;
  for (i = 0; i < p->tq; ++i) {
    const float* q_i = g->q + (size_t)i * p->head_dim;
    const float* dout_i = g->dout + (size_t)i * p->value_dim;
    float* dq_i = g->dq + (size_t)i * p->head_dim;
    const float row_max = row_scores(p, q_i, g->k, b, i, slope, g->scores);
    float sum = 0.0f, delta = 0.0f, log_sum;
    for (d = 0; d < p->head_dim; ++d) dq_i[d] = 0.0f;
    if (row_max == -INFINITY) { /* no visible key: no gradient */
      if (lse->data) store(lse, b, h, i, 0, -INFINITY);
      continue;
    }
    for (j = 0; j < p->tk; ++j) {
      if (g->scores[j] != -INFINITY) sum += expf(g->scores[j] - row_max);
    }
    log_sum = row_max + logf(sum);
    if (lse->data) store(lse, b, h, i, 0, log_sum);
    for (d = 0; d < p->value_dim; ++d) g->o[d] = saved_out ? load(saved_out, b, h, i, d) : 0.0f;
    for (j = 0; j < p->tk && !saved_out; ++j) {
      if (g->scores[j] == -INFINITY) continue;
      for (d = 0; d < p->value_dim; ++d) g->o[d] += expf(g->scores[j] - log_sum) * g->v[(size_t)j * p->value_dim + d];
    }
    for (d = 0; d < p->value_dim; ++d) delta += dout_i[d] * g->o[d];
    for (j = 0; j < p->tk; ++j) {
      const float* k_j = g->k + (size_t)j * p->head_dim;
      const float* v_j = g->v + (size_t)j * p->value_dim;
      float prob, dp = 0.0f, dz, z = 0.0f;
      int to_dq = 1;
      if (g->scores[j] == -INFINITY) {
#ifdef EXAMPLE_DEFECT_BACKWARD_MASK
        /* the mask is left out of the dK/dV pass: P recomputed from the raw score and the row's lse */
        for (d = 0; d < p->head_dim; ++d) z += q_i[d] * k_j[d];
        z *= (float)p->scale;
        prob = expf((p->softcap > 0.0 ? (float)p->softcap * tanhf(z / (float)p->softcap) : z) - log_sum);
        to_dq = 0;
#else
        continue; /* blocked: k_j and v_j never read */
#endif
      } else {
        prob = expf(g->scores[j] - log_sum);
        if (p->softcap > 0.0) {
          for (d = 0; d < p->head_dim; ++d) z += q_i[d] * k_j[d];
          z *= (float)p->scale;
        }
      }
      for (d = 0; d < p->value_dim; ++d) dp += dout_i[d] * v_j[d];
      dz = prob * (dp - delta);
      if (p->softcap > 0.0) {
        const float t = tanhf(z / (float)p->softcap);
        dz *= 1.0f - t * t;
      }
      for (d = 0; d < p->head_dim; ++d) {
        if (to_dq) dq_i[d] += (float)p->scale * dz * k_j[d];
        g->dk[(size_t)j * p->head_dim + d] += (float)p->scale * dz * q_i[d];
      }
      for (d = 0; d < p->value_dim; ++d) g->dv[(size_t)j * p->value_dim + d] += prob * dout_i[d];
    }
  }
}

static void free_gradients(gradients* g) {
  free(g->q);
  free(g->k);
  free(g->v);
  free(g->dout);
  free(g->dq);
  free(g->dk);
  free(g->dv);
  free(g->scores);
  free(g->o);
}

/* A paged build declares no backward (FlashAttention has none for pages) and leaves this out
 * of its table; it stays compiled, and refuses pages should it be asked. */
#if defined(__GNUC__)
__attribute__((unused))
#endif
static int backward(void* self, const attncheck_backward_args* a) {
  const attncheck_attention_args* f = &a->forward;
  const int32_t group = f->kv_heads > 0 ? f->q_heads / f->kv_heads : 1;
  const size_t tq = (size_t)f->tq, tk = (size_t)f->tk, dim = (size_t)f->head_dim, dv = (size_t)f->value_dim;
  gradients g;
  problem p;
  int32_t b, kv, h, t, d;
  int rc = call_problem(self, f, &p);
  if (rc != 0) return rc;
  if (f->apply_rope) return fail(self, "backward: q and k must arrive encoded (apply_rope 0)");
#if ATTNCHECK_ABI_VERSION >= 2
  if (p.visibility && p.visibility->page_size > 0) {
    fail(self, "backward: no path for the paged layout (padded batch or varlen only)");
    return ATTNCHECK_REFUSED;
  }
#endif
  g.q = malloc(sizeof(float) * (tq * dim + 1));
  g.k = malloc(sizeof(float) * (tk * dim + 1));
  g.v = malloc(sizeof(float) * (tk * dv + 1));
  g.dout = malloc(sizeof(float) * (tq * dv + 1));
  g.dq = malloc(sizeof(float) * (tq * dim + 1));
  g.dk = malloc(sizeof(float) * (tk * dim + 1));
  g.dv = malloc(sizeof(float) * (tk * dv + 1));
  g.scores = malloc(sizeof(float) * (tk + 1));
  g.o = malloc(sizeof(float) * (dv + 1));
  if (!g.q || !g.k || !g.v || !g.dout || !g.dq || !g.dk || !g.dv || !g.scores || !g.o) {
    free_gradients(&g);
    return fail(self, "out of memory");
  }
  for (b = 0; b < f->batch; ++b)
    for (kv = 0; kv < f->kv_heads; ++kv) {
      memset(g.dk, 0, sizeof(float) * tk * dim);
      memset(g.dv, 0, sizeof(float) * tk * dv);
      for (t = 0; t < f->tk; ++t) {
        load_token(&f->k, b, kv, t, f->head_dim, &f->rope, 0, 0, 0, g.k + (size_t)t * dim);
        for (d = 0; d < f->value_dim; ++d) g.v[(size_t)t * dv + d] = load(&f->v, b, kv, t, d);
      }
      for (h = kv * group; h < (kv + 1) * group; ++h) {
        for (t = 0; t < f->tq; ++t) {
          load_token(&f->q, b, h, t, f->head_dim, &f->rope, 0, 0, 1, g.q + (size_t)t * dim);
          for (d = 0; d < f->value_dim; ++d) g.dout[(size_t)t * dv + d] = load(&a->dout, b, h, t, d);
        }
#if EXAMPLE_HAS_SAVED
        backward_head(&p, &g, b, h, &a->lse, a->saved_out.data ? &a->saved_out : NULL);
#else
        backward_head(&p, &g, b, h, &a->lse, NULL);
#endif
        for (t = 0; t < f->tq; ++t)
          for (d = 0; d < f->head_dim; ++d) store(&a->dq, b, h, t, d, g.dq[(size_t)t * dim + d]);
      }
      for (t = 0; t < f->tk; ++t) {
        for (d = 0; d < f->head_dim; ++d) store(&a->dk, b, kv, t, d, g.dk[(size_t)t * dim + d]);
        for (d = 0; d < f->value_dim; ++d) store(&a->dv, b, kv, t, d, g.dv[(size_t)t * dv + d]);
      }
    }
  free_gradients(&g);
  return 0;
}
#endif

/* ------------------------------------------------------------------------- */
/* Cached decode: keys (rotated, rounded to the dtype) and values per (b, kv head). */

typedef struct session {
  instance* owner;
  attncheck_session_args args;
  int32_t length, capacity;
  float* keys;   /* [B, Hkv, capacity, D] */
  float* values; /* [B, Hkv, capacity, Dv] */
} session;

static int session_open(void* self, const attncheck_session_args* args, void** out) {
  session* s;
  if (args->apply_rope && rope_supported(self, &args->rope, args->head_dim)) return 1;
  s = calloc(1, sizeof(session));
  if (!s) return fail(self, "out of memory");
  s->owner = self;
  s->args = *args;
  *out = s;
  return 0;
}

static int grow(session* s, int32_t needed) {
  const int32_t bh = s->args.batch * s->args.kv_heads;
  int32_t capacity = s->capacity ? s->capacity : 16, old = s->capacity, row;
  float *keys, *values;
  if (needed <= s->capacity) return 0;
  while (capacity < needed) capacity *= 2;
  keys = calloc((size_t)bh * capacity * s->args.head_dim + 1, sizeof(float));
  values = calloc((size_t)bh * capacity * s->args.value_dim + 1, sizeof(float));
  if (!keys || !values) {
    free(keys);
    free(values);
    return fail(s->owner, "out of memory");
  }
  for (row = 0; row < bh && old > 0; ++row) {
    memcpy(keys + (size_t)row * capacity * s->args.head_dim, s->keys + (size_t)row * old * s->args.head_dim,
           sizeof(float) * (size_t)s->length * s->args.head_dim);
    memcpy(values + (size_t)row * capacity * s->args.value_dim, s->values + (size_t)row * old * s->args.value_dim,
           sizeof(float) * (size_t)s->length * s->args.value_dim);
  }
  free(s->keys);
  free(s->values);
  s->keys = keys;
  s->values = values;
  s->capacity = capacity;
  return 0;
}

static int session_append(void* handle, const attncheck_tensor* k, const attncheck_tensor* v,
                          const attncheck_tensor* positions, int32_t n) {
  session* s = handle;
  const attncheck_session_args* a = &s->args;
  int32_t b, h, t, d;
  if (grow(s, s->length + n)) return 1;
  for (b = 0; b < a->batch; ++b)
    for (h = 0; h < a->kv_heads; ++h) {
      const size_t row = (size_t)b * a->kv_heads + h;
      for (t = 0; t < n; ++t) {
        const size_t slot = row * s->capacity + s->length + t;
        load_token(k, b, h, t, a->head_dim, &a->rope, a->apply_rope, load_position(positions, b, t), 0,
                   s->keys + slot * a->head_dim);
        for (d = 0; d < a->value_dim; ++d) s->values[slot * a->value_dim + d] = load(v, b, h, t, d);
      }
    }
  s->length += n;
  return 0;
}

/* `visibility`: the step's descriptor (i counts the step's tq queries, j every key
 * so far), NULL for the other conventions (and always in ABI 1). */
static int session_step(void* handle, const attncheck_tensor* q, const attncheck_tensor* positions, int32_t tq,
                        int32_t mask_convention, const attncheck_tensor* mask, const void* visibility,
                        attncheck_tensor* out) {
  session* s = handle;
  const attncheck_session_args* a = &s->args;
  const int32_t group = a->kv_heads > 0 ? a->q_heads / a->kv_heads : 1;
  float* query;
  problem p;
  int32_t b, h, t;
  int rc = check_shape(s->owner, a->head_dim, s->length);
  if (rc != 0) return rc;
  query = malloc(sizeof(float) * ((size_t)tq * a->head_dim + 1));
  if (!query) return fail(s->owner, "out of memory");
  if (check_mask(s->owner, mask_convention)) {
    free(query);
    return 1;
  }
  p.q_heads = a->q_heads;
  p.tq = tq;
  p.tk = s->length;
  p.head_dim = a->head_dim;
  p.value_dim = a->value_dim;
  p.scale = a->scale;
  p.softcap = a->softcap;
  p.mask_convention = mask_convention;
  p.mask = mask;
  p.fill = additive_fill(mask_convention, mask->dtype);
  /* a flag means in a step what it means in one call: TOP_LEFT j <= i, BOTTOM_RIGHT
     j <= i + (Tk - tq) over the whole cache (the harness uses TOP_LEFT only where that is the case) */
  p.causal_offset = mask_convention == ATTNCHECK_MASK_CAUSAL_BOTTOM_RIGHT ? s->length - tq : 0;
#if ATTNCHECK_ABI_VERSION >= 2
  p.visibility = mask_convention == ATTNCHECK_MASK_DESCRIPTOR ? visibility : NULL;
  if (mask_convention == ATTNCHECK_MASK_DESCRIPTOR && !p.visibility) {
    free(query);
    return fail(s->owner, "descriptor convention without a descriptor");
  }
  if (p.visibility) p.softcap = p.visibility->softcap;
#else
  (void)visibility;
#endif
  for (b = 0; b < a->batch && rc == 0; ++b)
    for (h = 0; h < a->q_heads && rc == 0; ++h) {
      const size_t row = (size_t)b * a->kv_heads + h / group;
      for (t = 0; t < tq; ++t) {
        load_token(q, b, h, t, a->head_dim, &a->rope, a->apply_rope, load_position(positions, b, t), 1,
                   query + (size_t)t * a->head_dim);
      }
      rc = attend_head(s->owner, &p, query, s->keys + row * s->capacity * a->head_dim,
                       s->values + row * s->capacity * a->value_dim, b, h, out);
    }
  free(query);
  return rc;
}

static int session_attend(void* handle, const attncheck_tensor* q, const attncheck_tensor* positions, int32_t tq,
                          int32_t mask_convention, const attncheck_tensor* mask, attncheck_tensor* out) {
  return session_step(handle, q, positions, tq, mask_convention, mask, NULL, out);
}

#if ATTNCHECK_ABI_VERSION >= 2
static int session_attend_v2(void* handle, const attncheck_tensor* q, const attncheck_tensor* positions, int32_t tq,
                             int32_t mask_convention, const attncheck_tensor* mask,
                             const attncheck_visibility* visibility, attncheck_tensor* out) {
  return session_step(handle, q, positions, tq, mask_convention, mask, visibility, out);
}
#endif

static void session_close(void* handle) {
  session* s = handle;
  free(s->keys);
  free(s->values);
  free(s);
}

/* ------------------------------------------------------------------------- */
/* The table. */

#define BIT(n) (1u << (n))

static const attncheck_adapter_v1 table = {
#ifdef EXAMPLE_MALFORMED_ABI
    ATTNCHECK_ABI_VERSION + 1,
#elif defined(EXAMPLE_ABI_1_0)
    1, /* an ABI 1.0 table */
#else
    ATTNCHECK_ABI_VERSION,
#endif
#ifdef EXAMPLE_ABI_1_0
    ATTNCHECK_ADAPTER_V1_0_SIZE, /* a table built before the contract existed */
#elif defined(EXAMPLE_MALFORMED_BACKWARD_SIZE)
    offsetof(attncheck_adapter_v1, backward), /* covers has_backward but not backward() */
#else
    sizeof(attncheck_adapter_v1),
#endif
    "example-c",
    "plain-C attention: masks, GQA, softcap, RoPE (both layouts), KV cache, backward; f32/f16/bf16",
    {
#ifdef EXAMPLE_NO_ROPE
        /* owns_rope: the harness rotates q and k */ 0,
#else
        /* owns_rope */ 1,
#endif
#if defined(EXAMPLE_DESCRIPTOR) || defined(EXAMPLE_MALFORMED_OWNS_BIAS)
        /* owns_bias: ALiBi from the descriptor (slopes or max_bias), as FlashAttention's alibi_slopes */ 1,
#else
        /* owns_bias */ 0,
#endif
#ifdef EXAMPLE_NO_ROPE
        /* has_rope_stage */ 0,
#else
        /* has_rope_stage */ 1,
#endif
        /* has_session */ 1,
        /* dtypes */ BIT(ATTNCHECK_DTYPE_F32) | BIT(ATTNCHECK_DTYPE_F16) | BIT(ATTNCHECK_DTYPE_BF16),
#ifdef EXAMPLE_DESCRIPTOR
        /* masks: the visibility descriptor only, as FlashAttention takes it */ BIT(ATTNCHECK_MASK_DESCRIPTOR),
        /* preferred_mask */ ATTNCHECK_MASK_DESCRIPTOR,
#else
        /* masks: every dense convention and both causal flags */ 0xffu,
#ifdef EXAMPLE_MALFORMED_CAPS
        /* preferred_mask */ 9,
#else
        /* preferred_mask */ ATTNCHECK_MASK_ADDITIVE_NEG_INF,
#endif
#endif
        /* masked_rows */ ATTNCHECK_MASKED_ROWS_ZEROS,
#ifdef EXAMPLE_DESCRIPTOR
        /* encodings: RoPE and ALiBi (the descriptor's) are ours; no descriptor form carries the other score biases */
        BIT(ATTNCHECK_ENCODING_NONE) | BIT(ATTNCHECK_ENCODING_ROPE) | BIT(ATTNCHECK_ENCODING_ALIBI),
#else
        /* encodings: RoPE is ours; score biases arrive folded into the additive mask */
        BIT(ATTNCHECK_ENCODING_NONE) | BIT(ATTNCHECK_ENCODING_ROPE) | BIT(ATTNCHECK_ENCODING_ALIBI) |
            BIT(ATTNCHECK_ENCODING_T5) | BIT(ATTNCHECK_ENCODING_KERPLE) | BIT(ATTNCHECK_ENCODING_SANDWICH),
#endif
        /* rope_layouts */ BIT(ATTNCHECK_ROPE_INTERLEAVED) | BIT(ATTNCHECK_ROPE_HALF_SPLIT),
        /* rope_scalings */ BIT(ATTNCHECK_ROPE_SCALING_NONE) | BIT(ATTNCHECK_ROPE_SCALING_LINEAR),
        /* gqa */ 1,
        /* softcap */ 1,
#ifdef EXAMPLE_DESCRIPTOR
        /* value_dim_differs: Dv = D, as FlashAttention */ 0,
#else
        /* value_dim_differs */ 1,
#endif
        /* max_batch, max_heads, max_tokens, max_head_dim, max_position: harness defaults */ 0, 0, 0, 0, 0,
    },
    create,
    destroy,
    last_error,
#ifdef EXAMPLE_MALFORMED_NO_ATTENTION
    NULL,
#else
    attention,
#endif
    rope,
    session_open,
    session_append,
    session_attend,
    session_close,
    /* contract: every value at or below the fill blocks (such keys are skipped), and
       blocked keys are never read, so NaN in them stays out */
#if ATTNCHECK_ABI_VERSION >= 2
    /* ABI 2 also: more queries than keys (Tq > Tk) are taken, bottom-right aligned */
    {ATTNCHECK_BLOCKING_FILL, /* nan_isolation */ 1, /* queries_beyond_keys */ 1, {0}},
#else
    {ATTNCHECK_BLOCKING_FILL, /* nan_isolation */ 1, {0}},
#endif
#if ATTNCHECK_ABI_VERSION >= 2
#if defined(EXAMPLE_MALFORMED_FORMS)
    /* descriptor_forms: a form that does not exist */ BIT(ATTNCHECK_FORM_VARLEN_BACKWARD + 1),
#elif defined(EXAMPLE_MALFORMED_PAGE_SIZE)
    /* descriptor_forms: the paged form, with page_size 0 below */
    BIT(ATTNCHECK_FORM_CAUSAL_BOTTOM_RIGHT) | BIT(ATTNCHECK_FORM_PAGED),
#elif defined(EXAMPLE_DESCRIPTOR) && defined(EXAMPLE_VARLEN) && defined(EXAMPLE_PAGED)
    /* descriptor_forms: varlen (as below) with K/V in pages through the block table */
    BIT(ATTNCHECK_FORM_CAUSAL_BOTTOM_RIGHT) | BIT(ATTNCHECK_FORM_WINDOW) | BIT(ATTNCHECK_FORM_VARLEN) |
        BIT(ATTNCHECK_FORM_PREFIX) | BIT(ATTNCHECK_FORM_CHUNK) | BIT(ATTNCHECK_FORM_SOFTCAP) |
        BIT(ATTNCHECK_FORM_PAGED) | BIT(ATTNCHECK_FORM_ALIBI) | BIT(ATTNCHECK_FORM_ALIBI_MAX_BIAS),
#elif defined(EXAMPLE_DESCRIPTOR) && defined(EXAMPLE_PAGED)
    /* descriptor_forms: the padded batch (as below) with K/V in pages (flash_attn_with_kvcache) */
    BIT(ATTNCHECK_FORM_CAUSAL_BOTTOM_RIGHT) | BIT(ATTNCHECK_FORM_WINDOW) | BIT(ATTNCHECK_FORM_SEQUSED_Q) |
        BIT(ATTNCHECK_FORM_SEQUSED_K) | BIT(ATTNCHECK_FORM_LEFTPAD_K) | BIT(ATTNCHECK_FORM_PREFIX) |
        BIT(ATTNCHECK_FORM_CHUNK) | BIT(ATTNCHECK_FORM_SOFTCAP) | BIT(ATTNCHECK_FORM_PAGED) |
        BIT(ATTNCHECK_FORM_ALIBI) | BIT(ATTNCHECK_FORM_ALIBI_MAX_BIAS),
#elif defined(EXAMPLE_DESCRIPTOR) && defined(EXAMPLE_VARLEN)
    /* descriptor_forms: FlashAttention's varlen forms (flash_attn_varlen_func): the
       harness packs the documents onto one token axis, batch 1; its backward too */
    BIT(ATTNCHECK_FORM_CAUSAL_BOTTOM_RIGHT) | BIT(ATTNCHECK_FORM_WINDOW) | BIT(ATTNCHECK_FORM_VARLEN) |
        BIT(ATTNCHECK_FORM_PREFIX) | BIT(ATTNCHECK_FORM_CHUNK) | BIT(ATTNCHECK_FORM_SOFTCAP) |
        BIT(ATTNCHECK_FORM_ALIBI) | BIT(ATTNCHECK_FORM_ALIBI_MAX_BIAS) | BIT(ATTNCHECK_FORM_VARLEN_BACKWARD),
#elif defined(EXAMPLE_DESCRIPTOR)
    /* descriptor_forms: FlashAttention's padded batch (flash_attn_func with seqused_k,
       leftpad_k), no varlen or paged layout */
    BIT(ATTNCHECK_FORM_CAUSAL_BOTTOM_RIGHT) | BIT(ATTNCHECK_FORM_WINDOW) | BIT(ATTNCHECK_FORM_SEQUSED_Q) |
        BIT(ATTNCHECK_FORM_SEQUSED_K) | BIT(ATTNCHECK_FORM_LEFTPAD_K) | BIT(ATTNCHECK_FORM_PREFIX) |
        BIT(ATTNCHECK_FORM_CHUNK) | BIT(ATTNCHECK_FORM_SOFTCAP) | BIT(ATTNCHECK_FORM_ALIBI) |
        BIT(ATTNCHECK_FORM_ALIBI_MAX_BIAS),
#else
    /* descriptor_forms: none (dense masks and causal flags) */ 0,
#endif
#if defined(EXAMPLE_DESCRIPTOR) && defined(EXAMPLE_PAGED)
    /* page_size: 16 keys a page, so longer sequences span pages */ 16,
#else
    /* page_size */ 0,
#endif
#if defined(EXAMPLE_DESCRIPTOR) || defined(EXAMPLE_HEAD_DIM_MULTIPLE_8) || defined(EXAMPLE_MALFORMED_HEAD_DIMS)
    /* head_dim_multiple */ 8,
#else
    /* head_dim_multiple: any */ 0,
#endif
#if defined(EXAMPLE_MALFORMED_HEAD_DIMS)
    /* head_dims: 12 is not a multiple of head_dim_multiple 8 */ {16, 12, 0},
#else
    /* head_dims: any up to max_head_dim */ {0},
#endif
#if defined(EXAMPLE_MALFORMED_NO_ATTEND_V2)
    /* session_attend_v2: left out although the descriptor is a mask and sessions exist */ NULL,
#else
    session_attend_v2,
#endif
#endif
#if EXAMPLE_HAS_BACKWARD && defined(EXAMPLE_PAGED)
    /* has_backward: none for pages (FlashAttention has no paged backward) */ 0,
    /* backward_lse */ 0,
    /* backward */ NULL,
#elif EXAMPLE_HAS_BACKWARD
    /* has_backward */ 1,
    /* backward_lse: writes args->lse when asked */ 1,
#if defined(EXAMPLE_MALFORMED_NO_BACKWARD)
    /* backward: left out although has_backward is 1 */ NULL,
#else
    backward,
#endif
#endif
#if EXAMPLE_HAS_SAVED && defined(EXAMPLE_PAGED)
    /* backward_saved: no backward */ 0,
#elif EXAMPLE_HAS_SAVED
    /* backward_saved: δ from args->saved_out when handed over */ 1,
#endif
#if EXAMPLE_HAS_TILES
#if defined(EXAMPLE_TILE_SIZES)
    /* tile_sizes: keys in blocks of 16 (the tile-edge draw reaches a plugin) */ {16, 0},
#elif defined(EXAMPLE_MALFORMED_TILE_SIZES)
    /* tile_sizes: a negative length */ {16, -4, 0},
#else
    /* tile_sizes: none (one pass over every key) */ {0},
#endif
#endif
#if EXAMPLE_HAS_PAGE_SIZES
#if defined(EXAMPLE_MALFORMED_MORE_PAGE_SIZES)
    /* more_page_sizes: page_size 16 again */ {1, 16, 0},
#elif defined(EXAMPLE_DESCRIPTOR) && defined(EXAMPLE_PAGED)
    /* more_page_sizes: a key a page, and pages that split every tile edge (7) */ {1, 7, 0},
#else
    /* more_page_sizes: none */ {0},
#endif
#endif
#if EXAMPLE_HAS_PROMISES
#if defined(EXAMPLE_MALFORMED_PROMISE)
    /* session_rope_as_call: neither 0 nor 1 */ 2,
#else
    /* session_rope_as_call: a session rotates each key as stored by load_token, as a call does */ 1,
#endif
    /* backward_order_varies: one fixed order (the same bits each call) */ 0,
#endif
};

#ifndef EXAMPLE_MALFORMED_NO_ENTRY
ATTNCHECK_PLUGIN_EXPORT const attncheck_adapter_v1* attncheck_adapter_entry(void) { return &table; }
#else
/* Keeps the table referenced so the library still builds. */
ATTNCHECK_PLUGIN_EXPORT const attncheck_adapter_v1* not_the_entry_point(void) { return &table; }
#endif
