#!/usr/bin/env python3
"""Hugging Face transformers 5.24's mask builders and RoPE initialisers as attncheck
process backends, one per variant:

    python adapters/transformers/backend.py --variant sdpa-causal-f32

The mask of each call is built by transformers itself (masking_utils.py:
create_causal_mask, create_sliding_window_causal_mask, create_chunked_causal_mask,
create_bidirectional_mask, packed documents found from position_ids) from the inputs a
model hands it: a left-padded batch, its 2-D attention_mask, a DynamicCache holding the
past keys, position_ids. The attention then runs through transformers' own functions
(integrations/sdpa_attention.py sdpa_attention_forward, models/llama eager_attention_forward),
including what they run when a builder returns None (SDPA's is_causal). The rope variant
computes inverse frequencies with ROPE_INIT_FUNCTIONS and rotates with GPTNeoXRotaryEmbedding
and apply_rotary_pos_emb. Each variant declares its contract in VARIANTS with the source of
every claim. --defect-window-one-wider plants a deliberate slip for the tests.
"""

import math
import sys
import types
import warnings

import numpy as np
import torch
import transformers
from transformers import DynamicCache, LlamaConfig
from transformers import masking_utils as mu
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS
from transformers.models.gpt_neox.configuration_gpt_neox import GPTNeoXConfig
from transformers.models.gpt_neox.modeling_gpt_neox import GPTNeoXRotaryEmbedding, apply_rotary_pos_emb
from transformers.models.llama.modeling_llama import eager_attention_forward

import attncheck
from attncheck.library import (ALL_ROPE_SCALINGS, F32_THROUGHOUT, HARNESS_ENCODINGS, P_IN_INPUT_DTYPE,
                               backend_arguments, kv_cache_session, library_capabilities)

TORCH_DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16}
DEFECT_WINDOW = False  # --defect-window-one-wider: config.sliding_window one key larger than the window

# ---- the inputs a model hands the builders ------------------------------------------------------


class Sequence:
    """One sequence of a call: its batch row in the call's tensors, the indices of its real
    queries and of its keys there, and its prefix-LM length."""

    def __init__(self, row, queries, keys, prefix):
        self.row, self.queries, self.keys, self.prefix = row, queries, keys, prefix


def sequences(d, tq, tk, batch):
    """The descriptor's sequences: varlen (cu_seqlens, one per document) or the padded batch's
    rows (keys [leftpad_k, seqused_k), real queries [0, seqused_q)), as Descriptor.blocked
    reads them."""
    out = []
    if d.varlen:
        for s in range(d.num_sequences):
            prefix = int(d.prefix_len[s]) if d.prefix_len is not None else 0
            out.append(Sequence(0, np.arange(d.cu_seqlens_q[s], d.cu_seqlens_q[s + 1]),
                                np.arange(d.cu_seqlens_k[s], d.cu_seqlens_k[s + 1]), prefix))
        return out
    for b in range(batch):
        nq = int(d.seqused_q[b]) if d.seqused_q is not None else tq
        pad = int(d.leftpad_k[b]) if d.leftpad_k is not None else 0
        used = int(d.seqused_k[b]) if d.seqused_k is not None else tk
        prefix = int(d.prefix_len[b]) if d.prefix_len is not None else 0
        out.append(Sequence(b, np.arange(nq), np.arange(pad, used), prefix))
    return out


class LeftPadded:
    """The sequences as a model batches them for generate(): one batch row each, queries and
    keys left-padded so that every row ends at the same slot. Row s's query i sits at row
    Tq − nq + i, its key j at slot K − nk + j; the past (slots [0, K − Tq)) is in the cache.
    Absolute query slot K − nq + i then sees slot K − nk + j under kv ≤ q exactly when
    j ≤ i + nk − nq: the bottom-right diagonal the descriptor means."""

    def __init__(self, seqs, q, k, v, square=False):
        self.seqs = seqs
        self.tq = max([len(s.queries) for s in seqs] + [1])
        self.k_len = max([len(s.keys) for s in seqs] + [self.tq])
        if square:  # an encoder's layer has no cache: queries on the key slots, as many rows as slots
            self.tq = self.k_len
        n, hq, hkv = len(seqs), q.shape[1], k.shape[1]
        self.q = torch.zeros((n, hq, self.tq, q.shape[3]), dtype=q.dtype)
        self.k = torch.zeros((n, hkv, self.k_len, k.shape[3]), dtype=k.dtype)
        self.v = torch.zeros((n, hkv, self.k_len, v.shape[3]), dtype=v.dtype)
        self.attention_mask = torch.zeros((n, self.k_len), dtype=torch.long)  # 1 = a real token
        self.position_ids = torch.ones((n, self.tq), dtype=torch.long)  # pad queries at 1, as generate() does
        # block_sequence_ids: the prefix (prefix-LM) as one bidirectional block, −1 elsewhere
        self.blocks = torch.full((n, self.k_len), -1, dtype=torch.long)
        for s, seq in enumerate(seqs):
            nq, nk = len(seq.queries), len(seq.keys)
            qs, ks = self.tq - nq, self.k_len - nk
            self.q[s, :, qs:] = q[seq.row][:, seq.queries]
            self.k[s, :, ks:] = k[seq.row][:, seq.keys]
            self.v[s, :, ks:] = v[seq.row][:, seq.keys]
            self.attention_mask[s, ks:] = 1
            self.position_ids[s, qs:] = torch.arange(nq) + nk - nq
            self.blocks[s, ks:ks + seq.prefix] = 0
        self.past = self.k_len - self.tq

    def scatter(self, out, shape):
        """out [n, Tq, Hq, Dv] (transformers' layout) back to the call's [B, Hq, tq, Dv]; query
        rows in no sequence (a padded batch's rows past seqused_q) stay 0."""
        result = torch.zeros(shape, dtype=torch.float32)
        for s, seq in enumerate(self.seqs):
            nq = len(seq.queries)
            result[seq.row][:, seq.queries] = out[s, self.tq - nq:].transpose(0, 1).float()
        return result


def packed_row(seqs, q, k, v):
    """Every sequence packed on one row as DataCollatorWithFlattening packs them: no
    attention_mask, no cache, position_ids restarting at 0 per sequence, which is how
    find_packed_sequence_indices finds the documents. Square sequences only."""
    for seq in seqs:
        if len(seq.queries) != len(seq.keys):
            raise attncheck.Refuse("a packed sequence with more keys than queries: find_packed_sequence_indices "
                                   "reads one position_ids for queries and keys")
        if seq.prefix:
            raise attncheck.Refuse("prefix-LM in packed sequences: block_sequence_ids is not remapped per document")
    order_q = np.concatenate([s.queries for s in seqs]) if seqs else np.zeros(0, np.int64)
    order_k = np.concatenate([s.keys for s in seqs]) if seqs else np.zeros(0, np.int64)
    row = seqs[0].row if seqs else 0
    positions = torch.cat([torch.arange(len(s.queries)) for s in seqs])[None, :]
    return (q[row:row + 1][:, :, order_q], k[row:row + 1][:, :, order_k], v[row:row + 1][:, :, order_k], positions,
            order_q)


# ---- the builders -----------------------------------------------------------------------------


def model_config(implementation, kind, d, longest):
    """A LlamaConfig as a model's: the attention implementation, its layer type and the
    builder's parameter (config.sliding_window, config.attention_chunk_size). A causal case
    without a window (or chunk) is a window (chunk) longer than `longest`, every sequence's
    length: a Mistral-style model on a prompt shorter than its window."""
    config = LlamaConfig(hidden_size=8, num_attention_heads=1, num_key_value_heads=1, num_hidden_layers=1,
                         vocab_size=4, intermediate_size=8)
    config._attn_implementation = implementation
    if kind == "sliding":
        # masking_utils.sliding_window_overlay: kv_idx > q_idx − sliding_window, i.e. the window
        # counts W keys including the query's own (Mistral's convention) = descriptor left + 1.
        keys = int(d.window_left) + 1 if d.window_left >= 0 else longest + 1
        config.sliding_window = keys + (1 if DEFECT_WINDOW else 0)
        config.layer_types = ["sliding_attention"]
    if kind == "chunked":
        config.attention_chunk_size = int(d.chunk) if d.chunk > 0 else longest + 1
        config.layer_types = ["chunked_attention"]
    if kind == "bisliding":
        # sliding_window_bidirectional_overlay: abs(q_idx − kv_idx) <= sliding_window, an
        # inclusive distance: the window (S, S) of the descriptor is sliding_window = S
        # (S keys on each side, 2S + 1 with the query's own; the causal builder's W counts
        # the query's own key among its W). No window: a window wider than every sequence.
        distance = int(d.window_left) if d.window_left >= 0 else longest
        config.sliding_window = distance + (1 if DEFECT_WINDOW else 0)
        config.is_causal = False
    return config


def check_expressible(kind, d):
    """The descriptor parts each builder expresses; anything else is refused with the reason."""
    if d.paged:
        raise attncheck.Refuse("paged K/V: transformers' DynamicCache is contiguous")
    if d.causal == 1:
        raise attncheck.Refuse("top-left causal: transformers aligns the causal diagonal bottom-right (cache offset)")
    has_window = d.window_left >= 0 or d.window_right >= 0
    if kind == "sliding":
        if not (d.causal == 2 and d.window_right in (-1, 0)):
            raise attncheck.Refuse("create_sliding_window_causal_mask expresses a causal window (left, 0) alone")
    elif kind == "bisliding":
        if not (d.causal == 0 and d.window_right == d.window_left):
            raise attncheck.Refuse("create_bidirectional_sliding_window_mask expresses a symmetric window (S, S) "
                                   "without causal alone")
    elif has_window:
        raise attncheck.Refuse(f"a window is not this builder's (variant {kind})")
    if kind == "chunked":
        if d.causal != 2:
            raise attncheck.Refuse("create_chunked_causal_mask expresses causal chunked attention alone")
    elif d.chunk > 0:
        raise attncheck.Refuse(f"chunked attention is not this builder's (variant {kind})")
    if d.causal == 0 and kind != "bisliding" and (kind != "causal" or d.prefix_len is not None and d.prefix_len.any()):
        raise attncheck.Refuse("bidirectional attention: create_bidirectional_mask has no prefix or window here")


class Layer:
    """The module argument transformers' attention functions read (num_key_value_groups,
    is_causal, training)."""

    def __init__(self, groups, causal):
        self.num_key_value_groups, self.is_causal, self.training = groups, causal, False


def attend(implementation, q, k, v, mask, scale, causal):
    """transformers' attention function of the implementation: out [n, Tq, Hq, Dv]."""
    layer = Layer(q.shape[1] // k.shape[1], causal)
    if implementation == "sdpa":
        out, _ = sdpa_attention_forward(layer, q, k, v, mask, scaling=scale)
    else:
        out, _ = eager_attention_forward(layer, q, k, v, mask, scaling=scale)
    return out


class Builder:
    """One variant's mask path: `implementation` ("sdpa" or "eager") and `kind` ("causal",
    "sliding", "chunked", "packed" or "bisliding")."""

    def __init__(self, implementation, kind):
        self.implementation, self.kind = implementation, kind

    def __call__(self, q, k, v, call, key_positions):
        d = call.descriptor
        if d is None:
            raise attncheck.Refuse(f"mask convention {call.mask_convention} is not taken")
        check_expressible(self.kind, d)
        seqs = sequences(d, call.tq, call.tk, call.batch)
        config = model_config(self.implementation, self.kind, d, max([len(s.keys) for s in seqs] + [call.tk]))
        shape = (call.batch, q.shape[1], call.tq, v.shape[3])
        with torch.no_grad():
            if self.kind == "packed":
                return self.packed(config, seqs, q, k, v, call, shape)
            return self.padded(config, seqs, q, k, v, call, shape)

    def padded(self, config, seqs, q, k, v, call, shape):
        if not seqs:
            return torch.zeros(shape)
        batch = LeftPadded(seqs, q, k, v, square=call.descriptor.causal == 0)
        embeds = torch.zeros((len(seqs), batch.tq, 8), dtype=q.dtype)
        if call.descriptor.causal == 0:
            # an encoder's layer: no cache, the 2-D mask alone (create_bidirectional_mask, or
            # create_bidirectional_sliding_window_mask for a symmetric window)
            builder = (mu.create_bidirectional_sliding_window_mask if self.kind == "bisliding"
                       else mu.create_bidirectional_mask)
            mask = builder(config, embeds, batch.attention_mask)
            return batch.scatter(attend(self.implementation, batch.q, batch.k, batch.v, mask, call.scale, causal=False),
                                 shape)
        cache = DynamicCache(config=config)
        if batch.past:  # an earlier forward filled the cache
            cache.update(batch.k[:, :, :batch.past], batch.v[:, :, :batch.past], 0)
        prefix = call.descriptor.prefix_len is not None and bool(call.descriptor.prefix_len.any())
        builder = {"causal": mu.create_causal_mask, "sliding": mu.create_sliding_window_causal_mask,
                   "chunked": mu.create_chunked_causal_mask}[self.kind]
        extra = {"block_sequence_ids": batch.blocks} if prefix else {}
        if prefix and self.kind != "causal":
            raise attncheck.Refuse("prefix-LM is expressed with create_causal_mask's block_sequence_ids alone")
        mask = builder(config, embeds, batch.attention_mask, cache, position_ids=batch.position_ids, **extra)
        keys, values = cache.update(batch.k[:, :, batch.past:], batch.v[:, :, batch.past:], 0)
        return batch.scatter(attend(self.implementation, batch.q, keys, values, mask, call.scale, causal=True), shape)

    def packed(self, config, seqs, q, k, v, call, shape):
        if call.descriptor.causal != 2 or call.descriptor.prefix_len is not None and call.descriptor.prefix_len.any():
            raise attncheck.Refuse("packed documents are found for causal attention (create_causal_mask)")
        if not call.descriptor.varlen:
            raise attncheck.Refuse("a padded batch's row is one sequence, nothing packed")
        pq, pk, pv, positions, order_q = packed_row(seqs, q, k, v)
        if pq.shape[2] == 0:  # no token at all: a model is not called on an empty row
            return torch.zeros(shape)
        embeds = torch.zeros((1, pq.shape[2], 8), dtype=q.dtype)
        mask = mu.create_causal_mask(config, embeds, None, None, position_ids=positions)
        out = attend(self.implementation, pq, pk, pv, mask, call.scale, causal=True)  # [1, T, Hq, Dv]
        result = torch.zeros(shape, dtype=torch.float32)
        result[0][:, order_q] = out[0].transpose(0, 1).float()
        return result


# ---- the rope stage ----------------------------------------------------------------------------

# The harness's scalings (reference/rope_scaling.cc) as transformers' rope_parameters
# (modeling_rope_utils.py, ROPE_INIT_FUNCTIONS): rope_type and the fields each reads. Every
# scaling reads factor s and original context L; L is original_max_position_embeddings where
# the function reads that, max_position_embeddings where it reads the config's (dynamic).
# ntk-aware, yarn-paper and ntk-mixed have no rope_type; LongRoPE has no harness scaling.
ROPE_TYPES = {
    "none": ("default", lambda r: {}),
    "linear": ("linear", lambda r: {"factor": r["factor"]}),
    "dynamic-ntk": ("dynamic", lambda r: {"factor": r["factor"]}),
    "yarn": ("yarn", lambda r: {"factor": r["factor"], "original_max_position_embeddings": r["original_context"],
                                 "beta_fast": r["beta_fast"], "beta_slow": r["beta_slow"],
                                 **({"attention_factor": r["attn_factor"]} if r["attn_factor"] else {})}),
    "llama3": ("llama3", lambda r: {"factor": r["factor"], "original_max_position_embeddings": r["original_context"],
                                     "low_freq_factor": r["low_freq_factor"],
                                     "high_freq_factor": r["high_freq_factor"]}),
}


def yarn_range_flips(spec, rotary_dim):
    """Whether transformers' YaRN correction range comes out reversed (high < low), as
    _compute_yarn_parameters' find_correction_range computes it (floor, ceil, then clamped to
    [0, dim - 1] one side each): an original context L below 2π·beta_slow, or a slowest pair that
    still turns beta_fast times over L. Its ramp then flips (F35)."""
    def correction_dim(rotations):
        return (rotary_dim * math.log(spec["original_context"] / (rotations * 2 * math.pi))
                / (2 * math.log(spec["base"])))
    low = max(math.floor(correction_dim(spec["beta_fast"])), 0)
    high = min(math.ceil(correction_dim(spec["beta_slow"])), rotary_dim - 1)
    return high < low


def rope_config(spec, head_dim):
    """A GPTNeoXConfig whose rope_parameters state the case's RoPE (or a refusal saying why not).
    GPT-NeoX, not Llama: Llama has no partial rotary (its compute_default_rope_parameters reads
    the whole head_dim and its apply_rotary_pos_emb rotates every dim), GPT-NeoX rotates the
    first partial_rotary_factor · head_dim dims and passes the rest (models/gpt_neox)."""
    if spec.get("layout") != "half-split":
        raise attncheck.Refuse(f"RoPE layout {spec.get('layout')}: apply_rotary_pos_emb rotates halves (rotate_half)")
    if spec.get("log_n"):
        raise attncheck.Refuse("log-n query scaling: no transformers rope_type has it")
    if spec["scaling"] not in ROPE_TYPES:
        raise attncheck.Refuse(f"RoPE scaling {spec['scaling']}: no transformers rope_type computes it")
    rope_type, fields = ROPE_TYPES[spec["scaling"]]
    rotary_dim = int(spec.get("rotary_dim") or head_dim)
    if spec["scaling"] == "yarn" and yarn_range_flips(spec, rotary_dim):
        raise attncheck.Refuse("YaRN with a correction range whose high end lies below its low end: transformers' "
                               "linear_ramp_factor divides by high - low < 0 and keeps every pair unscaled, the "
                               "harness follows ggml (FINDINGS.md F35)")
    # GPT-NeoX's default partial_rotary_factor is 0.25 (rotary_pct): always stated
    parameters = {"rope_type": rope_type, "rope_theta": float(spec["base"]), "partial_rotary_factor":
                  rotary_dim / head_dim, **fields(spec)}
    return GPTNeoXConfig(hidden_size=head_dim, num_attention_heads=1, num_hidden_layers=1, vocab_size=4,
                         intermediate_size=8, max_position_embeddings=int(spec["original_context"]),
                         rope_parameters=parameters)


def rope(call):
    """x [B, H, T, D] rotated as a GPT-NeoX layer rotates its keys: GPTNeoXRotaryEmbedding(config)
    (inv_freq from ROPE_INIT_FUNCTIONS, attention_scaling on cos and sin, the dynamic update from
    max(position_ids) + 1) then apply_rotary_pos_emb on the first rotary_dim dims."""
    encoding = call.encoding or {}
    if encoding.get("kind") != "rope":
        raise attncheck.Refuse(f"encoding {encoding.get('kind')}: the rope stage rotates RoPE alone")
    spec = encoding["rope"]
    config = rope_config(spec, call.head_dim)
    positions = torch.from_numpy(np.asarray(call.positions, dtype=np.int64))
    if spec["scaling"] == "dynamic-ntk" and positions.numel():
        # dynamic_frequency_update scales by seq_len = max(position_ids) + 1 (above the original
        # context L); the harness's dynamic NTK by the call's current_length. A call whose
        # positions imply another length than current_length has no transformers form (F32).
        context = int(spec["original_context"])
        implied = int(positions.max()) + 1
        if max(implied, context) != max(int(call.current_length), context):
            raise attncheck.Refuse("dynamic NTK at a current length other than max(position_ids) + 1, the length "
                                   "transformers scales by")
    with torch.no_grad():
        embedding = GPTNeoXRotaryEmbedding(config)
        cos, sin = embedding(call.x, positions)  # [B, T, rotary_dim]
        rotated, _ = apply_rotary_pos_emb(call.x, call.x, cos, sin)
        return rotated


def rope_capabilities():
    # The rope stage alone: attention is SDPA over the harness's mask (the gate checks the
    # rotation through rope-relative, reference-agreement and decode-consistency).
    return library_capabilities(
        "f32", has_rope_stage=True, masks=["bool-visible"], masked_rows="zeros", nan_isolation=False,
        queries_beyond_keys=False, encodings=["rope"], rope_layouts=["half-split"],
        rope_scalings=list(ROPE_TYPES), rope_log_n=False, gqa=True, softcap=False, value_dim_differs=True,
        scale_argument=True, accuracy=F32_THROUGHOUT)


class PlainSdpa:
    """The attention of the rope variant: F.scaled_dot_product_attention with the harness's
    bool mask (True = attend), as sdpa_attention_forward passes a materialised mask."""

    def __call__(self, q, k, v, call, key_positions):
        if call.mask_convention != "bool-visible":
            raise attncheck.Refuse(f"mask convention {call.mask_convention} is not taken")
        mask = call.mask if isinstance(call.mask, torch.Tensor) else torch.from_numpy(call.mask)
        with torch.no_grad():
            out, _ = sdpa_attention_forward(Layer(q.shape[1] // k.shape[1], True), q, k, v, mask[:, None],
                                            scaling=call.scale)
        return out.transpose(1, 2).float()


# ---- the contracts ----------------------------------------------------------------------------

# The descriptor forms of each builder: the varlen form hands every document (and every row)
# over as its own sequence, which the backend batches as a model does (LeftPadded) or packs
# on one row (packed); decode sessions get the padded batch's seqused/leftpad forms. A
# builder declaring both is handed each layout in turn (the padded batch, and its rows
# with keys from slot 0); packed declares varlen alone (a padded row packs nothing), and its
# sessions still get the padded forms (SessionForms).
FORMS = {
    "causal": ["causal_bottom_right", "varlen", "seqused_q", "seqused_k", "leftpad_k", "prefix"],
    "sliding": ["causal_bottom_right", "window", "varlen", "seqused_q", "seqused_k", "leftpad_k"],
    "chunked": ["causal_bottom_right", "chunk", "varlen", "seqused_q", "seqused_k", "leftpad_k"],
    "packed": ["causal_bottom_right", "varlen"],  # a padded row is one sequence: nothing to pack
    "bisliding": ["window", "varlen", "seqused_q", "seqused_k", "leftpad_k"],
}


def mask_capabilities(implementation, kind, dtype):
    return library_capabilities(
        dtype,
        masks=["descriptor"],
        descriptor_forms=FORMS[kind],
        # sdpa: sdpa_mask's bool mask (True = attend) into F.scaled_dot_product_attention, whose
        # CPU paths give 0 for a row with no visible key (aten::_safe_softmax; the torch
        # adapters' probe). eager: eager_mask fills blocked keys with finfo(dtype).min and
        # eager_attention_forward's plain softmax spreads a row with no key over every slot
        # of the batch row, padding included: no promised value.
        masked_rows="zeros" if implementation == "sdpa" else "unspecified",
        # both multiply P by every V of the row (sdpa: attn_weight @ value; eager: matmul),
        # so NaN in a blocked V slot is 0·NaN: nothing promises isolation (a hazard).
        nan_isolation=False,
        queries_beyond_keys=False,  # a cache offset is never negative: Tq ≤ Tk per sequence
        encodings=HARNESS_ENCODINGS, rope_scalings=ALL_ROPE_SCALINGS,
        gqa=True, softcap=False,
        # sdpa_attention_forward: enable_gqa needs D == Dv (use_gqa_in_sdpa), else repeat_kv;
        # both take Dv ≠ D.
        value_dim_differs=True, scale_argument=True,
        # eager_attention_forward: softmax(dtype=float32).to(query.dtype) before P·V; SDPA's CPU
        # flash kernel also rounds P to the input dtype (torch adapters' FLASH_REDUCED).
        accuracy=F32_THROUGHOUT if dtype == "f32" else P_IN_INPUT_DTYPE)


def make_variants():
    variants = {}
    for implementation, kind, dtype, text in (
            ("sdpa", "causal", "f32", "create_causal_mask (padding, cache offset, prefix as block_sequence_ids, "
                                      "bidirectional) → sdpa_attention_forward"),
            ("sdpa", "causal", "bf16", "create_causal_mask → sdpa_attention_forward"),
            ("eager", "causal", "f32", "create_causal_mask (eager_mask) → llama eager_attention_forward"),
            ("sdpa", "sliding", "f32", "create_sliding_window_causal_mask, DynamicSlidingWindowLayer cache → "
                                       "sdpa_attention_forward"),
            ("eager", "sliding", "f32", "create_sliding_window_causal_mask (eager_mask) → eager_attention_forward"),
            ("sdpa", "chunked", "f32", "create_chunked_causal_mask → sdpa_attention_forward"),
            ("sdpa", "packed", "f32", "create_causal_mask, documents found from position_ids "
                                      "(find_packed_sequence_indices) → sdpa_attention_forward"),
            ("sdpa", "bisliding", "f32", "create_bidirectional_sliding_window_mask (symmetric window) → "
                                         "sdpa_attention_forward")):
        variants[f"{implementation}-{kind}-{dtype}"] = (
            lambda i=implementation, k=kind: Builder(i, k), lambda i=implementation, k=kind, d=dtype:
            mask_capabilities(i, k, d), text, dtype)
    variants["rope-f32"] = (PlainSdpa, rope_capabilities, "ROPE_INIT_FUNCTIONS (default, linear, dynamic, yarn, "
                            "llama3) + GPTNeoXRotaryEmbedding + apply_rotary_pos_emb as the rope stage, SDPA", "f32")
    return variants


VARIANTS = make_variants()


class Session:
    """The kernel every call runs; the KV cache of a session is the kit's (concatenated keys)."""
    kernel = None


def run(q, k, v, call, key_positions):
    return Session.kernel(q, k, v, call, key_positions)


def attention(call):
    return run(call.q, call.k, call.v, call, call.key_positions)


def main():
    global DEFECT_WINDOW
    args = backend_arguments(__doc__, VARIANTS)
    DEFECT_WINDOW = args.defect_window_one_wider
    warnings.simplefilter("ignore")
    transformers.logging.set_verbosity_error()
    torch.set_num_threads(1)  # bitwise repeatable runs; the harness runs its own workers
    make_kernel, capabilities, description, dtype = VARIANTS[args.variant]
    Session.kernel = make_kernel()
    return attncheck.serve(
        attention, name=f"hf-{args.variant}",
        description=f"transformers {transformers.__version__} on torch {torch.__version__} CPU: {description}",
        capabilities=capabilities(),
        versions={"transformers": transformers.__version__, "torch": torch.__version__.split("+")[0]},
        rope=rope if args.variant.startswith("rope") else None,
        session=kv_cache_session(run, lambda xs, axis: torch.cat(xs, dim=axis)), tensors="torch", native_dtype=True)


if __name__ == "__main__":
    sys.exit(main())
