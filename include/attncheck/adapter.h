/* The attncheck C plugin ABI, version 2.5: gate an attention kernel built anywhere.
 *
 * A plugin is a shared library exporting one function,
 *     const attncheck_adapter_v1* attncheck_adapter_entry(void);
 * that returns a table (static storage, valid while the library is loaded): the
 * ABI version, a name, the capabilities the kernel declares (the same facts as the
 * C++ Capabilities, DESIGN §5) and function pointers. Load it with
 *     attncheck gate --adapter plugin:path/to/libmy_kernel.so
 * ABI 1.1 appends the contract (attncheck_contract) to the table; a plugin built
 * against ABI 1.0 (a smaller struct_size) keeps loading with the defaults.
 * ABI 2 appends, keeping every ABI 1 layout: the visibility descriptor
 * (ATTNCHECK_MASK_DESCRIPTOR, attncheck_visibility) a FlashAttention-style kernel
 * takes instead of a dense mask, refusal of one case (ATTNCHECK_REFUSED), and
 * shape constraints (head_dim_multiple, head_dims). A plugin built against ABI 1
 * (abi_version 1) keeps loading and never sees an ABI 2 field.
 * ABI 2.1 (abi_version still 2, a larger struct_size, as 1.1 was to 1.0) appends
 * the backward pass: has_backward and backward() (attncheck_backward_args: dO in;
 * dQ, dK, dV and optionally the log-sum-exp out). A table built against ABI 2.0
 * (struct_size ATTNCHECK_ADAPTER_V2_0_SIZE) keeps loading and never gets a
 * backward call.
 * ABI 2.2 appends backward_saved to the table and two inputs to
 * attncheck_backward_args: the forward's output and log-sum-exp, as FlashAttention's
 * backward takes out and softmax_lse. A 2.1 table (ATTNCHECK_ADAPTER_V2_1_SIZE) keeps
 * loading and never gets them.
 * ABI 2.3 appends tile_sizes: the block lengths a tiled kernel walks queries and keys
 * in, so the harness draws lengths at their multiples and one off (tail tiles). A 2.2
 * table (ATTNCHECK_ADAPTER_V2_2_SIZE, or its sizeof with tail padding) keeps loading and
 * declares none.
 * ABI 2.4 appends more_page_sizes: further page sizes a paged kernel takes beside
 * page_size, each gated in turn. A 2.3 table (ATTNCHECK_ADAPTER_V2_3_SIZE) keeps
 * loading and is gated at its one page_size.
 * ABI 2.5 appends two contract promises: session_rope_as_call (a session rotates each
 * token as one attention call does) and backward_order_varies (a backward that sums in a
 * run-dependent order, as atomic adds do). A 2.4 table (ATTNCHECK_ADAPTER_V2_4_SIZE)
 * keeps loading and promises neither (0: the safe reading of each).
 * The harness checks the table strictly before any case runs; a table it cannot
 * trust (wrong version, missing mandatory function, capability values out of
 * range) is refused with one line and exit code 2.
 *
 * Tensors are plain buffers with shape, strides (in elements) and dtype. Every
 * function returns 0 on success; on failure it returns non-zero and last_error()
 * says why (the harness turns that into an error verdict for the case). In ABI 2
 * a function may return ATTNCHECK_REFUSED instead: the kernel does not take this
 * case (a shape or layout it has no path for); last_error() says why and the case
 * is a skip ("refused: <reason>"), not an error.
 *
 * Plain C99, no dependencies. Walkthrough: examples/plugin/README.md. */
#ifndef ATTNCHECK_ADAPTER_H_
#define ATTNCHECK_ADAPTER_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ATTNCHECK_ABI_VERSION 2
/* The minor version: what struct_size covers (2.0: up to session_attend_v2; 2.1:
 * has_backward and backward; 2.2: backward_saved; 2.3: tile_sizes; 2.4: more_page_sizes; 2.5:
 * session_rope_as_call and backward_order_varies). A minor version only appends; the
 * harness reads a field only when the table's struct_size covers it. */
#define ATTNCHECK_ABI_MINOR_VERSION 5

/* Return values. Any other non-zero value is a failure (an error verdict). */
#define ATTNCHECK_OK 0
#define ATTNCHECK_REFUSED 2 /* ABI 2: this case is not taken (a skip); last_error() says why */

#if defined(_WIN32)
#define ATTNCHECK_PLUGIN_EXPORT __declspec(dllexport)
#else
#define ATTNCHECK_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

/* The entry point's name, for dlsym. */
#define ATTNCHECK_ADAPTER_ENTRY "attncheck_adapter_entry"

/* Element types. A set of them is a bit mask: (1u << ATTNCHECK_DTYPE_F16) | ... */
typedef enum attncheck_dtype {
  ATTNCHECK_DTYPE_F32 = 0,   /* IEEE binary32 */
  ATTNCHECK_DTYPE_F16 = 1,   /* IEEE binary16, stored as uint16_t */
  ATTNCHECK_DTYPE_BF16 = 2,  /* bfloat16 (upper half of a binary32), stored as uint16_t */
  ATTNCHECK_DTYPE_U8 = 3,    /* bool masks: 0 or 1 */
  ATTNCHECK_DTYPE_I32 = 4    /* logical positions */
} attncheck_dtype;

/* How the visibility is handed to attention(). Same order as the C++ MaskConvention. */
typedef enum attncheck_mask_convention {
  ATTNCHECK_MASK_ADDITIVE_NEG_INF = 0,    /* additive [B,Tq,Tk]: 0 visible, -inf blocked */
  ATTNCHECK_MASK_ADDITIVE_LOWEST = 1,     /* 0 visible, lowest finite value of the dtype blocked */
  ATTNCHECK_MASK_ADDITIVE_MINUS_1E4 = 2,  /* 0 visible, -1e4 blocked */
  ATTNCHECK_MASK_ADDITIVE_MINUS_1E9 = 3,  /* 0 visible, -1e9 blocked (-inf once rounded to f16) */
  ATTNCHECK_MASK_BOOL_VISIBLE = 4,        /* u8 [B,Tq,Tk]: 1 = may attend */
  ATTNCHECK_MASK_BOOL_BLOCKED = 5,        /* u8 [B,Tq,Tk]: 1 = masked out */
  ATTNCHECK_MASK_CAUSAL_TOP_LEFT = 6,     /* no tensor: key j visible to query i iff j <= i */
  ATTNCHECK_MASK_CAUSAL_BOTTOM_RIGHT = 7, /* no tensor: j <= i + (Tk - Tq) */
  ATTNCHECK_MASK_DESCRIPTOR = 8           /* ABI 2, no tensor: attncheck_visibility (args.visibility) */
} attncheck_mask_convention;
/* A causal flag means the same rule in attention() and in every session_attend()
 * step. In a step, i counts the step's tq queries from 0 and j every key appended
 * so far (Tk of them): TOP_LEFT is literally j <= i, BOTTOM_RIGHT is
 * j <= i + (Tk - tq), the rule of cached decoding. The harness hands a flag over
 * only where its rule is the case's visibility, so a kernel that implements
 * TOP_LEFT literally is never asked to decode with it past the first step. */

/* ABI 2: the parts of a visibility descriptor a kernel takes (table field
 * descriptor_forms, a bit mask: (1u << ATTNCHECK_FORM_WINDOW) | ...). A case the
 * declared forms cannot express is a skip with the reason. Same order as the C++
 * DescriptorForms (cases/visibility_descriptor.h). */
typedef enum attncheck_descriptor_form {
  ATTNCHECK_FORM_CAUSAL_TOP_LEFT = 0,     /* causal 1 */
  ATTNCHECK_FORM_CAUSAL_BOTTOM_RIGHT = 1, /* causal 2 */
  ATTNCHECK_FORM_WINDOW = 2,              /* window_left / window_right */
  ATTNCHECK_FORM_VARLEN = 3,              /* cu_seqlens_q / cu_seqlens_k (packed token axis) */
  ATTNCHECK_FORM_SEQUSED_Q = 4,           /* real query rows of a padded batch */
  ATTNCHECK_FORM_SEQUSED_K = 5,           /* used key slots of a padded batch */
  ATTNCHECK_FORM_LEFTPAD_K = 6,           /* left padding of a padded batch */
  ATTNCHECK_FORM_PREFIX = 7,              /* prefix_len (prefix-LM) */
  ATTNCHECK_FORM_CHUNK = 8,               /* chunk (chunked local attention) */
  ATTNCHECK_FORM_PAGED = 9,               /* block_table, page size (table field page_size) */
  ATTNCHECK_FORM_ALIBI = 10,              /* alibi_slopes per query head */
  ATTNCHECK_FORM_ALIBI_MAX_BIAS = 11,     /* alibi_max_bias (ggml's form) */
  ATTNCHECK_FORM_SOFTCAP = 12,            /* softcap */
  ATTNCHECK_FORM_VARLEN_BACKWARD = 13     /* with VARLEN and has_backward: backward() takes the varlen
                                             layout too (flash_attn_varlen_func's backward) */
} attncheck_descriptor_form;

/* ABI 2: the visibility descriptor of one call (mask convention DESCRIPTOR), in
 * FlashAttention's convention (block_info.h, mask.h). In sequence s with nq real
 * queries and nk keys, query i's diagonal is d(i) = i (causal 1, top-left) or
 * d(i) = i + nk - nq (causal 2, bottom-right; also the reference point of a window
 * without causal), and key j (0 <= j < nk) is visible when
 *   (causal != 0 => j <= d(i)) and (window_left >= 0 => j >= d(i) - window_left)
 *   and (window_right >= 0 => j <= d(i) + window_right)
 *   and (chunk > 0 => floor(j / chunk) == floor(d(i) / chunk)),
 * or when d(i) < P and j < P (prefix-LM, P = prefix_len[s] > 0).
 * Padded batch (cu_seqlens_q NULL): sequence s is batch row b = s; its keys are
 * the slots [leftpad_k[b], seqused_k[b]) (seqused_k counts the left pad), so j is
 * slot - leftpad_k[b] and nk = seqused_k[b] - leftpad_k[b]; its real queries are
 * rows [0, seqused_q[b]) (nq = seqused_q[b]); a NULL array means every slot is
 * used (seqused_q = Tq, seqused_k = Tk, leftpad_k = 0). Rows past seqused_q, and
 * rows with no visible key (Tq > Tk), follow the declared masked-row policy.
 * Every array the kernel's forms do not include is NULL (0 for the scalars).
 * Ragged (leftpad_k NULL, seqused_k set; flash_attn_with_kvcache's cache_seqlens,
 * ONNX Runtime's seqlens_k): every row's keys start at slot 0, whatever padding
 * preceded them in the case; a kernel declaring SEQUSED_K without LEFTPAD_K always
 * gets left-padded rows so, and one declaring both gets either, case by case. */
typedef struct attncheck_visibility {
  int32_t causal;        /* 0 none, 1 top-left, 2 bottom-right */
  int32_t window_left;   /* inclusive offset left of the diagonal; -1 unbounded */
  int32_t window_right;  /* inclusive offset right of the diagonal; -1 unbounded (causal: 0) */
  int32_t num_sequences; /* S: the batch B, or the number of varlen sequences */
  /* Varlen: sequence s owns the packed queries [cu_seqlens_q[s], cu_seqlens_q[s+1])
   * and keys [cu_seqlens_k[s], cu_seqlens_k[s+1]). NULL: the padded batch. */
  const int32_t* cu_seqlens_q; /* [S + 1] or NULL */
  const int32_t* cu_seqlens_k; /* [S + 1] or NULL */
  const int32_t* seqused_q;    /* [B] or NULL: the first seqused_q[b] query rows are real */
  const int32_t* seqused_k;    /* [B] or NULL: key slots below seqused_k[b] are used */
  const int32_t* leftpad_k;    /* [B] or NULL: the first leftpad_k[b] key slots are padding */
  const int32_t* prefix_len;   /* [S] or NULL: the first P tokens of a sequence see each other */
  int32_t chunk;               /* chunked local attention: floor(t / chunk) equal; 0 off */
  /* Paged KV: sequence s's key slot j lives in physical page block_table[s * max_blocks
   * + j / page_size] at offset j % page_size. j counts slots: on the padded batch the
   * slot on the Tk axis, left pad included (FlashAttention's cache_leftpad pages it so);
   * varlen, the key's index in its sequence. Entries past a sequence's last page and
   * unused pages hold garbage. page_size 0: contiguous keys. */
  int32_t page_size, max_blocks, num_pages;
  const int32_t* block_table;  /* [S, max_blocks] or NULL */
  /* Kernel-owned ALiBi, score - slope_h * |d(i) - j|: slopes per query head, or
   * ggml's max_bias form (slopes from max_bias and the head count). At most one. */
  const double* alibi_slopes;  /* [Hq] or NULL */
  double alibi_max_bias;       /* 0: none */
  double softcap;              /* c * tanh(s / c) on the scores; 0 off (as the args' softcap) */
} attncheck_visibility;

/* ABI 2: tensor layouts of a call in the DESCRIPTOR convention. Padded batch
 * (cu_seqlens_q NULL, page_size 0): the shapes of attncheck_attention_args.
 * Varlen (cu_seqlens_q set; FlashAttention's flash_attn_varlen_func, with the head
 * axis before the token axis as everywhere here): batch = 1 and the token axis is
 * the packed one, tq = cu_seqlens_q[S] and tk = cu_seqlens_k[S]:
 *   q [1, Hq, total_q, D], k [1, Hkv, total_k, D], v [1, Hkv, total_k, Dv],
 *   query_positions [1, total_q], key_positions [1, total_k], out [1, Hq, total_q, Dv].
 * The sequences are the case's documents with the padding dropped; a padded query
 * slot in no sequence is not asked for (the harness gives it the declared masked-
 * row value when it unpacks the output, so it is not the kernel's output).
 * Paged (page_size > 0; flash_attn_with_kvcache's block_table): K and V are pages,
 *   k [num_pages, Hkv, page_size, D], v [num_pages, Hkv, page_size, Dv],
 * sequence s's key slot j (padded batch: the slot, left pad included; varlen: the
 * index in the sequence) at page block_table[s * max_blocks + j / page_size], offset
 * j % page_size; pages are shuffled, and every unused page, the slots past a
 * sequence's last key, and what table entries past its last page point at hold NaN
 * (a kernel that reads one fails). tk and key_positions stay on the logical key
 * axis (packed when varlen). Sessions always hand over the padded batch: a
 * session's KV cache is a padded cache (seqused_k / leftpad_k), never varlen or paged.
 * A kernel taking the varlen or paged form is also decoded over a cache its caller
 * owns, as flash_attn_with_kvcache is: decode-consistency then makes one attention()
 * call per decode step, the step's queries over every key so far, in that layout. */

/* What the kernel writes for a query row with no visible key. */
typedef enum attncheck_masked_row_policy {
  ATTNCHECK_MASKED_ROWS_ZEROS = 0,
  ATTNCHECK_MASKED_ROWS_NAN = 1,
  ATTNCHECK_MASKED_ROWS_UNSPECIFIED = 2, /* anything; NaN there is reported as a hazard */
  ATTNCHECK_MASKED_ROWS_MEAN_V = 3       /* every key of the batch row weighted equally */
} attncheck_masked_row_policy;

/* Which additive mask values block a key (attncheck_contract.blocking). */
typedef enum attncheck_blocking {
  ATTNCHECK_BLOCKING_FILL = 0,    /* every value <= the convention's fill blocks: a row filled
                                     with it has no visible key (masked_rows applies) */
  ATTNCHECK_BLOCKING_NEG_INF = 1, /* only -inf blocks; a finite fill is a very negative score,
                                     so a row filled with it attends to every key */
  ATTNCHECK_BLOCKING_FILL_ROWS = 2 /* the mask is added: a key at a finite fill whose score
                                     outweighs it is read, but a row whose every entry is at or
                                     below the fill has no visible key (masked_rows applies) */
} attncheck_blocking;

/* Positional encodings a kernel accepts cases with. With owns_rope = 0 the harness
 * applies every q/k encoding itself and hands over encoded q and k; score biases
 * (ALiBi, T5, KERPLE, Sandwich) are always folded by the harness into an additive
 * mask in ABI 1, so they need an additive convention. With owns_rope = 1 the kernel
 * rotates q and k itself from the positions and the rope spec; ABI 1 then accepts
 * only NONE, ROPE and the score biases (the spec carries no other q/k encoding). */
typedef enum attncheck_encoding {
  ATTNCHECK_ENCODING_NONE = 0,
  ATTNCHECK_ENCODING_SINUSOIDAL = 1,
  ATTNCHECK_ENCODING_LEARNED = 2,
  ATTNCHECK_ENCODING_ROPE = 3,
  ATTNCHECK_ENCODING_ALIBI = 4,
  ATTNCHECK_ENCODING_T5 = 5,
  ATTNCHECK_ENCODING_KERPLE = 6,
  ATTNCHECK_ENCODING_XPOS = 7,
  ATTNCHECK_ENCODING_SANDWICH = 8
} attncheck_encoding;

typedef enum attncheck_rope_layout {
  ATTNCHECK_ROPE_INTERLEAVED = 0,  /* pairs (2k, 2k+1): GPT-J, RoFormer */
  ATTNCHECK_ROPE_HALF_SPLIT = 1    /* pairs (k, k + rotary_dim/2): GPT-NeoX, HF LLaMA */
} attncheck_rope_layout;

typedef enum attncheck_rope_scaling {
  ATTNCHECK_ROPE_SCALING_NONE = 0,
  ATTNCHECK_ROPE_SCALING_LINEAR = 1,
  ATTNCHECK_ROPE_SCALING_NTK_AWARE = 2,
  ATTNCHECK_ROPE_SCALING_DYNAMIC_NTK = 3,
  ATTNCHECK_ROPE_SCALING_YARN = 4,
  ATTNCHECK_ROPE_SCALING_LLAMA3 = 5,
  ATTNCHECK_ROPE_SCALING_NTK_MIXED = 6,
  ATTNCHECK_ROPE_SCALING_YARN_PAPER = 7
} attncheck_rope_scaling;

/* What the kernel implements and promises. Sets are bit masks over the enums above. */
typedef struct attncheck_capabilities {
  int32_t owns_rope;       /* 1: rotates q and k itself (attention args apply_rope) */
  int32_t owns_bias;       /* 0: score biases arrive folded into the mask. 1 (ABI 2, masks = DESCRIPTOR
                              only, with FORM_ALIBI or FORM_ALIBI_MAX_BIAS): the kernel adds the
                              descriptor's ALiBi itself; T5/KERPLE/Sandwich are then not taken */
  int32_t has_rope_stage;  /* 1: rope() implemented (rotation alone) */
  int32_t has_session;     /* 1: session_* implemented (cached decode) */
  uint32_t dtypes;         /* bits of attncheck_dtype among F32, F16, BF16; not empty */
  uint32_t masks;          /* bits of attncheck_mask_convention; not empty */
  int32_t preferred_mask;  /* one of `masks` */
  int32_t masked_rows;     /* attncheck_masked_row_policy */
  uint32_t encodings;      /* bits of attncheck_encoding; must include NONE */
  uint32_t rope_layouts;   /* bits of attncheck_rope_layout (owns_rope: not empty) */
  uint32_t rope_scalings;  /* bits of attncheck_rope_scaling (owns_rope: must include NONE) */
  int32_t gqa;             /* 1: kv_heads may divide q_heads (kv head = h / (Hq/Hkv)) */
  int32_t softcap;         /* 1: applies softcap c·tanh(s/c) to scores when args.softcap > 0 */
  int32_t value_dim_differs; /* 1: value_dim may differ from head_dim */
  /* Largest shapes the harness draws; 0 = the harness default. */
  int32_t max_batch, max_heads, max_tokens, max_head_dim, max_position;
} attncheck_capabilities;

/* A tensor: element (i0, i1, i2, i3) lives at data + Σ i_n·strides[n] elements.
 * Unused trailing dims have shape 1. Inputs are read-only (writing to one, or
 * outside an output, is a failure of its own). */
typedef struct attncheck_tensor {
  void* data;
  int32_t dtype;  /* attncheck_dtype */
  int32_t rank;
  int64_t shape[4];
  int64_t strides[4];
} attncheck_tensor;

/* The rotary spec of the case (meaningful when apply_rope is 1). Frequencies
 * theta_k = base^(-2k/rotary_dim), k < rotary_dim/2, then the scaling: e.g.
 * LINEAR theta_k / factor. The query is also multiplied by max(1, ln(p+1)/ln(L))
 * when log_n is 1 (L = original_context). Only the first rotary_dim dims rotate. */
typedef struct attncheck_rope_spec {
  int32_t layout;            /* attncheck_rope_layout */
  int32_t scaling;           /* attncheck_rope_scaling */
  int32_t rotary_dim;        /* even, <= head_dim */
  int32_t original_context;  /* L */
  int32_t ntk_exact_exponent;
  int32_t log_n;
  double base;
  double factor;             /* s */
  double beta_fast, beta_slow, attn_factor;     /* YaRN */
  double low_freq_factor, high_freq_factor;     /* Llama3 */
  double mixed_b;                                /* NTK-mixed */
} attncheck_rope_spec;

/* One attention call: out = softmax(scale · q kᵀ (softcapped) + mask) v per
 * (b, h), kv head h / (q_heads / kv_heads). q, k, v, out and an additive mask
 * carry the case dtype (F32, F16 or BF16). */
typedef struct attncheck_attention_args {
  int32_t batch, q_heads, kv_heads, tq, tk, head_dim, value_dim;
  attncheck_tensor q;                /* [B, Hq, Tq, D] */
  attncheck_tensor k;                /* [B, Hkv, Tk, D] */
  attncheck_tensor v;                /* [B, Hkv, Tk, Dv] */
  attncheck_tensor query_positions;  /* I32 [B, Tq] logical positions */
  attncheck_tensor key_positions;    /* I32 [B, Tk] */
  int32_t mask_convention;           /* one of the declared masks */
  attncheck_tensor mask;             /* [B, Tq, Tk]; data NULL for causal flags */
  int32_t apply_rope;                /* 1: rotate q and k at their positions per `rope` */
  attncheck_rope_spec rope;
  int32_t current_length;            /* sequence length dynamic scalings see */
  double scale;                      /* never 0 */
  double softcap;                    /* 0 = off */
  attncheck_tensor out;              /* [B, Hq, Tq, Dv], written by the kernel */
  /* ABI 2 (a plugin built against ABI 1 never reads it): */
  const attncheck_visibility* visibility; /* NULL unless mask_convention == DESCRIPTOR */
} attncheck_attention_args;

/* ABI 2.1: the backward pass of one attention call (has_backward), a second call on
 * the same case. `forward` is the attncheck_attention_args attention() would get,
 * except: q and k always arrive already encoded (apply_rope 0, whatever owns_rope
 * says: the gradients are those of the q and k the attention core reads) and
 * forward.out.data is NULL (the saved output, where declared, is `saved_out` below).
 * Padded layouts, and varlen ones for a table declaring ATTNCHECK_FORM_VARLEN_BACKWARD:
 * then forward.visibility may carry cu_seqlens, with q, dout, dq (and saved_out,
 * saved_lse, lse) on the packed query axis [1, Hq, total_q, ·] and k, v, dk, dv on the
 * packed key axis [1, Hkv, total_k, ·], as attention() gets them ("Tensor layouts").
 * Never pages (page_size 0): a paged case is not asked for, nor a varlen one without
 * the form (the form is new in ABI 2.3's header; an older table never sets it). Score biases arrive as
 * in attention() (folded into an additive mask, or the descriptor's ALiBi); the
 * bias is a constant, so it has no gradient of its own.
 *
 * With P the softmax of row i over its visible keys (the forward above, softcap
 * included) and O = P V: dV_j = Σ_i P_ij dO_i; dP_ij = dO_i · v_j;
 * dS_ij = P_ij (dP_ij − Σ_d dO_id O_id); dZ_ij = dS_ij · (1 − tanh²(z_ij / c)) with
 * softcap c > 0 (z_ij = scale · q_i · k_j), else dS_ij; dQ_i = scale Σ_j dZ_ij k_j;
 * dK_j = scale Σ_i dZ_ij q_i. With GQA, dK and dV of kv head g sum over every
 * query head h of the call with h / (q_heads / kv_heads) == g. A row with no
 * visible key has no gradient: its dQ is 0 and it adds nothing to dK or dV,
 * whatever the declared masked-row policy writes in the forward. A key no row
 * sees gets dK = dV = 0. Every element of dq, dk and dv is written (zeros
 * included); NaN or inf in a blocked K/V slot must reach no gradient.
 * dq, dk and dv carry the case dtype (F32, F16 or BF16), as q, k, v and dout. */
typedef struct attncheck_backward_args {
  attncheck_attention_args forward; /* as attention() gets it; apply_rope 0, out.data NULL */
  attncheck_tensor dout;            /* [B, Hq, Tq, Dv] in: the upstream gradient dO */
  attncheck_tensor dq;              /* [B, Hq, Tq, D] out */
  attncheck_tensor dk;              /* [B, Hkv, Tk, D] out */
  attncheck_tensor dv;              /* [B, Hkv, Tk, Dv] out */
  /* OPTIONAL out, F32 [B, Hq, Tq], set only for a table declaring backward_lse 1 (else
   * data is NULL: write nothing there). When set: the natural log of row i's softmax
   * normaliser, log Σ_j e^(s_ij) over its visible keys, s_ij the score after scale,
   * softcap and bias (FlashAttention's softmax_lse); a row with no visible key gets any
   * value (-inf, or +inf as FlashAttention writes; not checked), but is written. */
  attncheck_tensor lse;
  /* ABI 2.2, OPTIONAL INPUTS, set only for a table declaring backward_saved 1 (else data
   * is NULL: recompute them): what a correct forward of this case saves, as
   * FlashAttention's backward takes out and softmax_lse. Read-only (the harness checks
   * they are not written). `saved_out` [B, Hq, Tq, Dv] in the case dtype: the reference
   * forward's output rounded to the dtype (0 on a row with no visible key). `saved_lse` F32
   * [B, Hq, Tq]: the log-sum-exp as defined for the output `lse` above, rounded to f32.
   * A row with no visible key carries +inf there, as FlashAttention's forward writes it
   * (e^(s - lse) is then 0), but that is no promise: do not read it for such a row. */
  attncheck_tensor saved_out;
  attncheck_tensor saved_lse;
} attncheck_backward_args;

/* Rotation alone (has_rope_stage): out = R(p) x, key side (no log-n scale). */
typedef struct attncheck_rope_args {
  int32_t batch, heads, tokens, head_dim;
  attncheck_tensor x;          /* [B, H, T, D] */
  attncheck_tensor positions;  /* I32 [B, T] */
  attncheck_rope_spec rope;
  int32_t current_length;
  attncheck_tensor out;        /* [B, H, T, D] */
} attncheck_rope_args;

/* A cached-decode session over one batch (has_session). */
typedef struct attncheck_session_args {
  int32_t batch, q_heads, kv_heads, head_dim, value_dim;
  int32_t dtype;       /* attncheck_dtype of every tensor of the session */
  int32_t apply_rope;  /* 1: keys are appended unrotated; rotate them (and queries) */
  attncheck_rope_spec rope;
  int32_t current_length;
  double scale;
  double softcap;
} attncheck_session_args;

/* The contract (ABI 1.1): promises on which real kernels differ. A table whose
 * struct_size ends before `contract` (built against ABI 1.0) gets the defaults
 * written here, the strict common case. Breaking a promise is a failure;
 * behaviour the contract allows but that is dangerous (NaN spreading where
 * nan_isolation is 0, NaN rows where masked_rows is UNSPECIFIED) is a hazard. */
typedef struct attncheck_contract {
  int32_t blocking;       /* attncheck_blocking; default FILL */
  int32_t nan_isolation;  /* 1 (default): NaN/inf in key/value slots no query may read
                             never reaches a visible output */
  int32_t queries_beyond_keys; /* 1: accepts Tq > Tk (ABI 2; 0 in ABI 1 tables): the first Tq - Tk
                                  query rows lie before every key, bottom-right aligned */
  int32_t reserved[5];    /* 0 */
} attncheck_contract;

/* The table (its name kept from ABI 1; ABI 2 appends to it). */
typedef struct attncheck_adapter_v1 {
  uint32_t abi_version;  /* ATTNCHECK_ABI_VERSION */
  uint32_t struct_size;  /* sizeof(attncheck_adapter_v1) */
  const char* name;         /* short name, e.g. "my-flash-kernel" */
  const char* description;  /* one line */
  attncheck_capabilities capabilities;

  /* Optional: one instance per harness adapter (and per worker thread). When
   * create is NULL every function receives instance NULL. */
  void* (*create)(void);
  void (*destroy)(void* instance);
  /* Mandatory: why the last call on this instance (or one of its sessions) failed. */
  const char* (*last_error)(void* instance);

  /* Mandatory. */
  int (*attention)(void* instance, const attncheck_attention_args* args);
  /* Mandatory when has_rope_stage. */
  int (*rope)(void* instance, const attncheck_rope_args* args);

  /* Mandatory (all four) when has_session; ABI 2: session_attend may be NULL when
   * the only mask is DESCRIPTOR (session_attend_v2 below). k [B, Hkv, n, D],
   * v [B, Hkv, n, Dv], positions I32 [B, n]; q [B, Hq, tq, D] attends to every key
   * appended so far (Tk of them) with mask [B, tq, Tk] in `mask_convention`;
   * out [B, Hq, tq, Dv]. */
  int (*session_open)(void* instance, const attncheck_session_args* args, void** session);
  int (*session_append)(void* session, const attncheck_tensor* k, const attncheck_tensor* v,
                        const attncheck_tensor* positions, int32_t n);
  int (*session_attend)(void* session, const attncheck_tensor* q, const attncheck_tensor* positions,
                        int32_t tq, int32_t mask_convention, const attncheck_tensor* mask,
                        attncheck_tensor* out);
  void (*session_close)(void* session);

  /* ABI 1.1: read only when struct_size covers it. */
  attncheck_contract contract;

  /* ABI 2: read only when abi_version is 2 (struct_size must then cover them: at least
   * ATTNCHECK_ADAPTER_V2_0_SIZE). */
  uint32_t descriptor_forms;  /* bits of attncheck_descriptor_form; not empty when masks
                                 include DESCRIPTOR, else 0 */
  int32_t page_size;          /* ATTNCHECK_FORM_PAGED: the page size the kernel takes (>= 1) */
  /* Shape constraints: the harness draws only head dims (D of q and k) the kernel
   * takes; a kernel that needs Dv to follow declares value_dim_differs 0. */
  int32_t head_dim_multiple;  /* D % head_dim_multiple == 0; 0 or 1: any */
  int32_t head_dims[8];       /* the head dims taken, 0-terminated; empty: any up to max_head_dim */
  /* Mandatory when has_session and masks include DESCRIPTOR (then used for every
   * step, whatever the convention): session_attend plus the step's visibility
   * (NULL unless mask_convention is DESCRIPTOR), i counting the step's tq queries
   * and j the Tk keys appended so far, as in attention(). */
  int (*session_attend_v2)(void* session, const attncheck_tensor* q, const attncheck_tensor* positions,
                           int32_t tq, int32_t mask_convention, const attncheck_tensor* mask,
                           const attncheck_visibility* visibility, attncheck_tensor* out);

  /* ABI 2.1: read only when struct_size covers them (at least ATTNCHECK_ADAPTER_V2_1_SIZE);
   * a 2.0 table ends before them and has no backward. */
  int32_t has_backward;       /* 1: backward() implemented (the backward-* laws run) */
  int32_t backward_lse;       /* 1: backward() writes args->lse when its data is set (the harness
                                 then sets it and backward-agreement checks it); 0: lse.data stays NULL */
  /* Mandatory when has_backward: the backward pass of one call (attncheck_backward_args).
   * Returns 0, ATTNCHECK_REFUSED (a case it has no backward path for: a skip) or a failure. */
  int (*backward)(void* instance, const attncheck_backward_args* args);

  /* ABI 2.2: read only when struct_size covers it (at least ATTNCHECK_ADAPTER_V2_2_SIZE);
   * a 2.1 table ends before it and never gets the saved inputs. */
  int32_t backward_saved;     /* 1: backward() takes args->saved_out and args->saved_lse (the harness sets
                                 them); 0 (only 0 or 1; 1 needs has_backward): their data stays NULL */

  /* ABI 2.3: read only when struct_size covers it (at least ATTNCHECK_ADAPTER_V2_3_SIZE);
   * a 2.2 table ends before it. The tile (block) lengths the kernel walks queries and keys
   * in, 0-terminated, each 1 to 65536 (e.g. {64, 128, 0}: FlashAttention's kBlockM and
   * kBlockN); empty: none declared. The harness then draws a tenth or more of its cases
   * with Tq and Tk at a multiple of a tile or one off (Capabilities::tile_sizes). */
  int32_t tile_sizes[8];

  /* ABI 2.4: read only when struct_size covers it (at least ATTNCHECK_ADAPTER_V2_4_SIZE);
   * a 2.3 table ends before it. Further page sizes the ATTNCHECK_FORM_PAGED form takes
   * beside page_size, 0-terminated, each 1 to 65536, none equal to page_size or to
   * another (e.g. {1, 256, 0}: a page of one key, and FlashAttention's usual page);
   * empty, or without the paged form: none. Each case is then drawn at one of the page
   * sizes (Case::page_size, attncheck_visibility.page_size), so every size is gated. */
  int32_t more_page_sizes[8];

  /* ABI 2.5: read only when struct_size covers them (at least ATTNCHECK_ADAPTER_V2_5_SIZE);
   * a 2.4 table ends before them. Contract promises, each 0 or 1. */
  int32_t session_rope_as_call; /* 1 (needs has_session): the session rotates each token (RoPE) as
                                   one attention() call at the same position does, with the same
                                   float angles; decode-consistency then leaves the kernel's angle
                                   error out of the session-vs-prefill comparison. 0: it may rotate
                                   its cache on another path, and each side is allowed its angle
                                   error at its absolute positions */
  int32_t backward_order_varies; /* 1 (needs has_backward): backward() sums dq, dk or dv in a
                                    run-dependent order (atomic adds across tiles), so two calls
                                    differ in the last bits; the backward laws that compare two
                                    runs allow that order's rounding. 0: the same bits each call */
} attncheck_adapter_v1;

/* The size of an ABI 1.0 table (before `contract`): still accepted. */
#define ATTNCHECK_ADAPTER_V1_0_SIZE offsetof(attncheck_adapter_v1, contract)
/* The size of an ABI 1.1 table (abi_version 1, before the ABI 2 fields). */
#define ATTNCHECK_ADAPTER_V1_1_SIZE offsetof(attncheck_adapter_v1, descriptor_forms)
/* The size of an ABI 2.0 table (abi_version 2, before the backward fields). */
#define ATTNCHECK_ADAPTER_V2_0_SIZE offsetof(attncheck_adapter_v1, has_backward)
/* The size of an ABI 2.1 table (before backward_saved). */
#define ATTNCHECK_ADAPTER_V2_1_SIZE (offsetof(attncheck_adapter_v1, backward) + sizeof(void (*)(void)))
/* The least size of an ABI 2.2 table (sizeof may add tail padding). */
#define ATTNCHECK_ADAPTER_V2_2_SIZE (offsetof(attncheck_adapter_v1, backward_saved) + sizeof(int32_t))
/* The least size of an ABI 2.3 table. */
#define ATTNCHECK_ADAPTER_V2_3_SIZE (offsetof(attncheck_adapter_v1, tile_sizes) + 8 * sizeof(int32_t))
/* The least size of an ABI 2.4 table. */
#define ATTNCHECK_ADAPTER_V2_4_SIZE (offsetof(attncheck_adapter_v1, more_page_sizes) + 8 * sizeof(int32_t))
/* The least size of an ABI 2.5 table. */
#define ATTNCHECK_ADAPTER_V2_5_SIZE (offsetof(attncheck_adapter_v1, backward_order_varies) + sizeof(int32_t))

typedef const attncheck_adapter_v1* (*attncheck_adapter_entry_fn)(void);

/* The one symbol a plugin exports. */
ATTNCHECK_PLUGIN_EXPORT const attncheck_adapter_v1* attncheck_adapter_entry(void);

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif  /* ATTNCHECK_ADAPTER_H_ */
