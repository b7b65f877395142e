#!/usr/bin/env python3
"""PyTorch 2.13's CPU attention (and, on a GPU machine's own torch, the cuda-* variants) as attncheck
process backends, one per variant:

    python adapters/torch/backend.py --variant sdpa-math-f32

Each variant is one adapter (torch-<variant>) with its own contract, declared in
VARIANTS below with the source of every claim: torch's installed Python source
(nn/functional.py, nn/attention/flex_attention.py, _higher_order_ops/flex_attention.py,
_decomp/decompositions.py) and what ATen's CPU kernels do where only that decides
(aten/src/ATen/native/cpu/FlashAttentionKernel.cpp, checked by `attncheck probe`).
It speaks the process protocol through the attncheck kit (python/attncheck); logs
go to stderr. --defect-window-one-wider and --defect-backward-lse-other-row (the flash
variants' backward answers each row's lse from the row before) plant deliberate slips for
the tests.
"""

import math
import re
import sys
import warnings

import numpy as np
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.nn.attention.flex_attention import BlockMask, and_masks, create_block_mask, flex_attention, or_masks

import attncheck
from attncheck.library import ALL_ROPE_SCALINGS as ROPE_SCALINGS
from attncheck.library import (F32_THROUGHOUT, HARNESS_ENCODINGS, backend_arguments, kv_cache_session,
                               library_capabilities)

TORCH_DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}

# HARNESS_ENCODINGS, ROPE_SCALINGS: the encodings the harness applies for a kernel that owns
# none, the kit's (attncheck.library) as for the other library adapters.
# FlexAttention owns the ALiBi bias (a score_mod); RoPE and the absolute encodings stay
# the harness's. No other score bias: those would need the harness to fold them.
FLEX_ENCODINGS = ["none", "rope", "sinusoidal", "learned", "xpos", "alibi"]

# Shapes drawn (LIMITS): the size tier's Tk 256–512, D 64/128 is where ATen's CPU flash
# kernel tiles (q_split_size 256/64, kv_split_size 512 by length).
# Accuracy of the math path (F32_THROUGHOUT): nn/functional.py's scaled_dot_product_attention
# docs, "For math backend, all intermediates are kept in torch.float if inputs are in
# torch.half or torch.bfloat16" (the CPU math path upcasts q/k/v, computes in f32, rounds the output).
# ATen's CPU flash kernel (FlashAttentionKernel.cpp, cpu_flash_attention): q·kᵀ by a
# reduced-precision gemm accumulating in f32 into an f32 score block, the online softmax
# in f32, then P converted to the input dtype ("qk_reduced") for the P·V gemm (f32 accum).
FLASH_REDUCED = {"score_accum": "f32", "pv_accum": "f32", "scores_in_input_dtype": False,
                 "p_in_input_dtype": True}


def sdpa_capabilities(dtype, flash):
    # nn/functional.py scaled_dot_product_attention: attn_mask bool "True indicates that the
    # element *should* take part in attention" (bool-visible; bool-blocked is inverted here,
    # as a user migrating from MHA's key_padding_mask does), float mask "added to the
    # attention score" (add-inf: only −inf blocks, a finite fill is a score, so no finite
    # fill convention is declared), is_causal "the upper left causal bias" (causal-top-left,
    # torch.nn.attention.bias.CausalBias: j ≤ i whatever Tq and Tk; a session step is told
    # the same flag). enable_gqa: query head h reads kv head h // (Hq/Hkv) (repeat_interleave).
    return library_capabilities(
        dtype,
        masks=["bool-visible", "bool-blocked", "add-inf", "causal-top-left"],
        # A row with no visible key: 0 since 2.5, the math path's aten::_safe_softmax
        # (_decomp/decompositions.py safe_softmax: a row all −inf gives zeros); the CPU flash
        # kernel writes 0 where the row's running sum stays 0 (probe: zeros).
        masked_rows="zeros",
        blocking="neg-inf",
        # P·V multiplies every key's probability, 0 for a blocked key, by its value: NaN or
        # inf in a blocked V slot gives 0·NaN = NaN; a NaN K slot makes the row's score NaN
        # before the −inf is added. The docs' formula is attn_weight @ value: nothing
        # promises isolation, so a leak is a hazard.
        nan_isolation=False,
        queries_beyond_keys=True,
        encodings=HARNESS_ENCODINGS, rope_scalings=ROPE_SCALINGS,
        gqa=True, softcap=False,
        # the CPU flash kernel has no path for Dv ≠ D ("No available kernel"; sdp_utils_cpp)
        value_dim_differs=not flash,
        scale_argument=True,
        # autograd through the same call: the math path's composite backward, the CPU flash
        # kernel's fused backward (_scaled_dot_product_flash_attention_cpu_backward)
        has_backward=True,
        # The flash variants answer the kernel's own log-sum-exp: SDPA's flash branch
        # (aten/src/ATen/native/transformers/attention.cpp, scaled_dot_product_attention, case
        # SDPBackend::flash_attention) returns std::get<0> of _scaled_dot_product_flash_attention_for_cpu
        # (query, key, value, dropout_p, is_causal, attn_mask, scale) -> (output, logsumexp); the
        # backward calls that op itself (flash_with_lse) and autograd runs its fused backward, which
        # recomputes P from that logsumexp. logsumexp is accum-dtype (f32 for bf16/f16) [B, H, Tq]
        # (_meta_registrations.py meta__scaled_dot_product_flash_attention_for_cpu); cpu_flash_attention
        # (native/cpu/FlashAttentionKernel.cpp) stores qk_max + log(qk_sum) with the scores scaled
        # and masked, a row with no visible key 0 + log(1) = 0 ("Row sums for full masked out rows
        # are 0, we set them to 1"). The math path computes no lse (_scaled_dot_product_attention_math
        # returns (output, attn weights)), so it declares none. Declared for f32 only: in bf16
        # the kernel's lse is off by up to 5e-5 (1.8e-5 relative) from the exact lse of the
        # same bf16 inputs, which the op run in f32 gets to 1.3e-7; an f32-accumulation model
        # bounds it at ~2e-6. The reduced-precision path's fast exp (pytorch PR #115151,
        # exp_u20) is the likely cause, not confirmed in the 2.13 source: until the tolerance
        # model has a term for it, the bf16/f16 lse is not claimed (FINDINGS, PyTorch 2.13).
        backward_lse=flash and dtype == "f32",
        accuracy=FLASH_REDUCED if flash and dtype != "f32" else F32_THROUGHOUT)


# On an NVIDIA GPU (torch built with CUDA; the cuda-* variants): SDPA's three fused CUDA
# backends and compiled FlexAttention (Triton), in f16 and bf16. What each backend takes is
# decided per call by sdp_utils.cpp (aten/src/ATen/native/transformers/cuda): a call it
# cannot take aborts "No available kernel" after a warning per reason, which run_sdpa turns
# into a refusal with those reasons, so a contract too wide shows as skips with their cause.
# Declared from what sdp_utils.cpp answered on an H200 with torch 2.11.0+cu130 and cuDNN
# 9.19 (a matrix of shapes, dtypes and masks per backend, forward and backward alike;
# FINDINGS.md, "PyTorch on CUDA"):
# - FLASH_ATTENTION (FlashAttention-2): f16/bf16, no attn_mask (is_causal only, and only
#   with Tq = Tk: "Flash attention does not support the is_causal flag when seqlen_q !=
#   seqlen_k"), one head dim for q, k and v up to 256 (any D: torch pads it), enable_gqa.
# - EFFICIENT_ATTENTION (the CUTLASS memory-efficient kernel of xformers): f32/f16/bf16,
#   a float or bool attn_mask, D (and Dv) a multiple of 8 in 16-bit; no enable_gqa ("both
#   fused kernels require query, key and value to have the same num_heads").
# - CUDNN_ATTENTION (cuDNN's fused flash attention): f16/bf16, a float or bool attn_mask,
#   Dv ≠ D, enable_gqa, D a multiple of 8 up to 256.
# None of the three documents what a row with no visible key returns (unspecified), and
# each multiplies every key's probability by its value (NaN isolation not promised). Each
# computes q·k with f32 accumulation and rounds P to the input dtype for P·V (FlashAttention-2's
# and CUTLASS's epilogues), as the CPU flash kernel does (FLASH_REDUCED).
SDPA_MASKS = ["bool-visible", "bool-blocked", "add-inf", "causal-top-left"]
CUDA_SDPA = {
    "flash": {"backend": "FLASH_ATTENTION", "masks": ["causal-top-left"], "gqa": True, "value_dim_differs": False,
              "head_dim_multiple": 1},
    # Dv ≠ D runs, but Dv too must be a multiple of 8 in 16-bit ("Mem efficient attention requires last
    # dimension of inputs to be divisible by 8": ~190 refusals per Dv value in the first gate) and no key
    # constrains Dv alone: Dv = D here
    "efficient": {"backend": "EFFICIENT_ATTENTION", "masks": SDPA_MASKS, "gqa": False, "value_dim_differs": False,
                  "head_dim_multiple": 8},
    "cudnn": {"backend": "CUDNN_ATTENTION", "masks": SDPA_MASKS, "gqa": True, "value_dim_differs": True,
              "head_dim_multiple": 8},
    "math": {"backend": "MATH", "masks": SDPA_MASKS, "gqa": True, "value_dim_differs": True, "head_dim_multiple": 1},
}


def cuda_sdpa_capabilities(dtype, kind):
    spec = CUDA_SDPA[kind]
    return library_capabilities(
        dtype, masks=spec["masks"],
        # the math path is _safe_softmax's on CUDA too (a row with no key: 0)
        masked_rows="zeros" if kind == "math" else "unspecified",
        blocking="neg-inf", nan_isolation=False, queries_beyond_keys=True,
        encodings=HARNESS_ENCODINGS, rope_scalings=ROPE_SCALINGS,
        gqa=spec["gqa"], softcap=False, value_dim_differs=spec["value_dim_differs"], scale_argument=True,
        head_dim_multiple=spec["head_dim_multiple"],
        has_backward=True,
        # the fused backwards add dQ's key tiles with atomics (FlashAttention-2's flash_bwd,
        # the CUTLASS kernel's; torch.use_deterministic_algorithms warns for them): two calls
        # differ in the last bits (flaky 1-ulp dq in the first H200 gate); cuBLAS's math is fixed
        backward_deterministic=kind == "math",
        accuracy=F32_THROUGHOUT if kind == "math" else FLASH_REDUCED)


def flex_capabilities(dtype, cuda=False):
    # nn/attention/flex_attention.py: the visibility is a mask_mod(b, h, q_idx, kv_idx) -> bool
    # (True = attend), turned into a BlockMask by create_block_mask; score_mod(score, b, h,
    # q_idx, kv_idx) gets the scaled score q·k·scale and returns the score softmax sees.
    # The descriptor's forms are written as a user writes them (FlexAttention's examples):
    # document ids per token, causal and windows against the diagonal, prefix-LM, chunks;
    # a dense bool mask as a mask_mod reading it (bool-visible).
    return library_capabilities(
        dtype, owns_bias=True,
        masks=["descriptor", "bool-visible"],
        descriptor_forms=["causal_top_left", "causal_bottom_right", "window", "seqused_q", "seqused_k",
                          "leftpad_k", "prefix", "chunk", "alibi", "softcap"],
        # _higher_order_ops/flex_attention.py (the eager math) ends in aten::_safe_softmax:
        # a row with no key gives 0 (lse −inf); the compiled kernel keeps a 0 row sum as 0.
        masked_rows="zeros",
        blocking="fill",
        # a masked (b, q, kv) is −inf before the softmax, but P·V still multiplies every V
        # of a computed block: a NaN in a masked V slot may reach visible rows (hazard).
        nan_isolation=False,
        queries_beyond_keys=True,
        encodings=FLEX_ENCODINGS, rope_scalings=ROPE_SCALINGS,
        gqa=True, softcap=True, value_dim_differs=True, scale_argument=True,
        # no backward on the CPU in 2.13: _higher_order_ops/flex_attention.py raises
        # "NotImplementedError: FlexAttention does not support backward on CPU" (a gate of
        # the eager variant with has_backward answered it on every case); on CUDA the
        # compiled backward is a Triton template too (kernel/flex/flex_attention.py).
        has_backward=cuda,
        # Triton's template: q·k by tl.dot in the input dtype into f32, P rounded to V's dtype
        # for the second tl.dot
        accuracy=FLASH_REDUCED if cuda and dtype != "f32" else F32_THROUGHOUT)


def mha_capabilities(dtype):
    # F.multi_head_attention_forward (nn/functional.py): attn_mask bool "True ... is not
    # allowed to attend" (bool-blocked), float added (add-inf); key_padding_mask True =
    # ignored key. One head count for q, k and v (no GQA), kdim = vdim = embed_dim here, and
    # q is always scaled by 1/sqrt(head_dim) (no scale argument).
    return library_capabilities(
        dtype,
        masks=["bool-blocked", "add-inf"],
        # need_weights=True runs softmax(attn_mask + q·kᵀ) itself (no _safe_softmax): a row
        # with no key is 0/0; need_weights=False hands the merged mask to SDPA. Nothing in
        # the docs says what a fully masked row returns.
        masked_rows="unspecified",
        blocking="neg-inf",
        nan_isolation=False,
        queries_beyond_keys=True,
        encodings=HARNESS_ENCODINGS, rope_scalings=ROPE_SCALINGS,
        gqa=False, softcap=False, value_dim_differs=False, scale_argument=False,
        has_backward=True,  # autograd through multi_head_attention_forward (identity projections)
        accuracy=F32_THROUGHOUT)


# ---- SDPA -------------------------------------------------------------------


def sdpa_mask(call, convention, mask, dtype):
    """(attn_mask [B, 1, Tq, Tk] or None, is_causal) as SDPA takes them."""
    if convention == "causal-top-left":
        return None, True
    if convention == "bool-visible":
        return mask[:, None], False
    if convention == "bool-blocked":
        return ~mask[:, None], False
    if convention == "add-inf":
        return mask[:, None].to(dtype), False  # "a float mask of the same type as query"
    raise attncheck.Refuse(f"mask convention {convention} is not taken")


TRIGGERED = re.compile(r"\s*\(Triggered internally at [^)]*\)\.?")


def run_sdpa(backend, q, k, v, call, convention, mask):
    attn_mask, is_causal = sdpa_mask(call, convention, mask, q.dtype)
    with warnings.catch_warnings(record=True) as caught, sdpa_kernel([backend]):
        warnings.simplefilter("always")
        try:
            return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, is_causal=is_causal,
                                                  scale=call.scale, enable_gqa=q.shape[1] != k.shape[1])
        except RuntimeError as e:
            # CUDA and the CPU flash kernel: "No available kernel"; a backend this build of
            # torch does not have at all (EFFICIENT_ATTENTION on the CPU): "No viable backend"
            if "No available kernel" not in str(e) and "No viable backend" not in str(e):
                raise
            # sdp_utils_cpp warns each reason the kernel cannot run before it aborts
            reasons = "; ".join(TRIGGERED.sub("", str(w.message)).strip() for w in caught) or str(e).splitlines()[0]
            raise attncheck.Refuse(f"{backend.name}: {reasons}") from None


# ---- FlexAttention ------------------------------------------------------------


def token_layout(d, batch, tq, tk):
    """Per-token sequence ids and local indices of a descriptor, the way FlexAttention's
    document-masking examples precompute them: q_seq/k_seq [B, T] (−1: a slot of no
    sequence: padding, unused rows), q_loc/k_loc the index inside the sequence, q_diag
    the query's diagonal (i, or i + nk − nq bottom-right) and q_prefix its sequence's
    prefix length."""
    q_seq = np.full((batch, tq), -1, np.int64)
    k_seq = np.full((batch, tk), -1, np.int64)
    q_loc = np.zeros((batch, tq), np.int64)
    k_loc = np.zeros((batch, tk), np.int64)
    q_diag = np.zeros((batch, tq), np.int64)
    q_prefix = np.zeros((batch, tq), np.int64)
    for s in range(d.num_sequences if d.varlen else batch):
        if d.varlen:  # batch 1, sequence s between its cu_seqlens entries
            row, q0, nq = 0, int(d.cu_seqlens_q[s]), int(d.cu_seqlens_q[s + 1] - d.cu_seqlens_q[s])
            k0, nk = int(d.cu_seqlens_k[s]), int(d.cu_seqlens_k[s + 1] - d.cu_seqlens_k[s])
        else:  # padded batch: keys in slots [leftpad_k, seqused_k), queries rows [0, seqused_q)
            row, q0 = s, 0
            nq = int(d.seqused_q[s]) if d.seqused_q is not None else tq
            k0 = int(d.leftpad_k[s]) if d.leftpad_k is not None else 0
            nk = (int(d.seqused_k[s]) if d.seqused_k is not None else tk) - k0
        i = np.arange(nq)
        q_seq[row, q0:q0 + nq] = s
        q_loc[row, q0:q0 + nq] = i
        q_diag[row, q0:q0 + nq] = i if d.causal == 1 else i + nk - nq
        q_prefix[row, q0:q0 + nq] = int(d.prefix_len[s]) if d.prefix_len is not None else 0
        k_seq[row, k0:k0 + nk] = s
        k_loc[row, k0:k0 + nk] = np.arange(nk)
    return {name: torch.from_numpy(a) for name, a in
            (("q_seq", q_seq), ("k_seq", k_seq), ("q_loc", q_loc), ("k_loc", k_loc), ("q_diag", q_diag),
             ("q_prefix", q_prefix))}


DEFECT_WINDOW = False  # --defect-window-one-wider: the left window admits one key more


def descriptor_mask_mod(d, t):
    """The descriptor as FlexAttention mask_mods, composed with and_masks / or_masks.
    Every parameter is a tensor and every form's mod is always there (one that cannot bite
    answers True), so each variant traces one graph for every descriptor: the compiled
    kernel, and the eager path's dynamo trace, which guards on the mods' code. Composing
    only the mods a descriptor needs saved ~9 ms of gather per mod but re-traced (~1 s) on
    every new combination: 72 traces in 148 eager calls of left-padding."""
    dev = t["q_seq"].device
    causal = torch.tensor(int(d.causal), device=dev)
    left = torch.tensor(int(d.window_left) + (1 if DEFECT_WINDOW and d.window_left >= 0 else 0), device=dev)
    right = torch.tensor(int(d.window_right), device=dev)
    chunk = torch.tensor(max(int(d.chunk), 0), device=dev)
    q_seq, k_seq, q_diag, k_loc, q_prefix = t["q_seq"], t["k_seq"], t["q_diag"], t["k_loc"], t["q_prefix"]

    def same_document(b, h, q_idx, kv_idx):  # padding and other documents are other "documents"
        return (q_seq[b, q_idx] == k_seq[b, kv_idx]) & (q_seq[b, q_idx] >= 0)

    def causal_mask(b, h, q_idx, kv_idx):
        return (causal == 0) | (k_loc[b, kv_idx] <= q_diag[b, q_idx])

    def window_mask(b, h, q_idx, kv_idx):
        j, diagonal = k_loc[b, kv_idx], q_diag[b, q_idx]
        return ((left < 0) | (j >= diagonal - left)) & ((right < 0) | (j <= diagonal + right))

    def chunk_mask(b, h, q_idx, kv_idx):
        size = torch.clamp(chunk, min=1)
        return (chunk == 0) | (torch.div(k_loc[b, kv_idx], size, rounding_mode="floor") ==
                               torch.div(q_diag[b, q_idx], size, rounding_mode="floor"))

    def prefix_mask(b, h, q_idx, kv_idx):  # prefix-LM: a query inside the prefix reads all of it
        diagonal, prefix = q_diag[b, q_idx], q_prefix[b, q_idx]
        return (diagonal >= 0) & (diagonal < prefix) & (k_loc[b, kv_idx] < prefix)

    return and_masks(same_document, or_masks(and_masks(causal_mask, window_mask, chunk_mask), prefix_mask))


def alibi_slopes(heads):
    """ALiBi's get_slopes (Press et al. 2022): 2^(−8i/n) for n a power of two, else the
    m = 2^⌊log2 n⌋ slopes then every other slope of the 2m rule."""
    def power_of_two(n):
        return [2.0 ** (-8.0 * (i + 1) / n) for i in range(n)]
    m = 1 << int(math.floor(math.log2(heads)))
    return power_of_two(m) + power_of_two(2 * m)[0::2][:heads - m]


# The compiled variant's shape buckets. torch.compile(flex_attention, dynamic=True) cannot
# be used: Inductor's C++ FlexAttention template swaps the names of its q/kv split-size
# symbols into the generated code with str.replace (codegen/cpp_flex_attention_template.py),
# so a size symbol that a captured mask tensor needs (ks37) becomes "cur_kvSplitSize7" when
# the split symbol is ks3, and g++ rejects the kernel (FINDINGS.md, PyTorch 2.13). Static
# shapes have no such symbols; every case is padded into one of a few static shapes so the
# gate compiles a few dozen kernels, not one per case: padded batch rows and query rows are
# in no document (output 0, sliced off), padded keys are in no document (never visible),
# padded head dims are 0 (q·k and P·V unchanged), kv heads repeated to the query heads.
BUCKETS_T = (8, 40, 128, 512)
BUCKETS_D = (8, 32, 128)
# Batch and query heads as drawn (LIMITS: 3 and 4); masked-rows adds a batch row whose every
# key is blocked (properties/law_support.h EmptyRowsCaseFor), so 4 rows has a bucket too.
BUCKETS_B = (3, 4)
PAD_HEADS = 4
EAGER_D = (8, 32, 64, 128)  # the eager variant's head-dim buckets (Flex.pad_heads_and_dims)
# On CUDA the kernel is a Triton template (kernel/flex/flex_attention.py) that pads its own
# blocks (128 rows by default) and whose tl.dot needs D ≥ 16, and each compile costs
# seconds: fewer, larger buckets (every case of the small tier in one shape per D).
CUDA_BUCKETS = {"b": (4,), "t": (64, 512), "d": (32, 128)}
CPU_BUCKETS = {"b": BUCKETS_B, "t": BUCKETS_T, "d": BUCKETS_D}


def bucket(n, sizes):
    return next((b for b in sizes if n <= b), n)


def pad_to(x, shape, value=0):
    """x zero-padded (or `value`) at the end of each dim up to `shape`."""
    out = torch.full(shape, value, dtype=x.dtype, device=x.device)
    out[tuple(slice(0, n) for n in x.shape)] = x
    return out


def whole_grid_block_mask(mask_mod, tq, tk):
    """A BlockMask of one partial block over the whole grid (as flex_attention's own default,
    _create_empty_block_mask, with the mask_mod): every score goes through mask_mod. The eager
    path reads nothing of a BlockMask but its mask_mod (_higher_order_ops/flex_attention.py,
    _math_attention_inner: mask_mod = block_mask[-1], applied to every (b, h, q, kv)), so
    create_block_mask's grid-wide evaluation of the mods (~25% of an eager case) is skipped;
    the compiled variant, whose kernel skips blocks, still builds it with create_block_mask."""
    return BlockMask.from_kv_blocks(torch.ones([1, 1, 1], dtype=torch.int32), torch.zeros([1, 1, 1, 1], dtype=torch.int32),
                                    BLOCK_SIZE=1 << 30, mask_mod=mask_mod, seq_lengths=(tq, tk))


class Flex:
    def __init__(self, compiled, device="cpu"):
        self.compiled = compiled
        self.device = torch.device(device)
        self.buckets = CUDA_BUCKETS if self.device.type == "cuda" else CPU_BUCKETS
        # Eager flex_attention is dynamo-traced too (flex_attention.py wraps the higher-order op
        # in torch.compile(backend="eager", fullgraph=True)), once per new mask_mod/score_mod
        # closure and shape: lift dynamo's recompile limit (8) and fail rather than fall back.
        torch._dynamo.config.recompile_limit = 1024
        torch._dynamo.config.accumulated_recompile_limit = 1 << 20
        torch._dynamo.config.fail_on_recompile_limit_hit = True
        if compiled:
            self.attend = torch.compile(flex_attention, dynamic=False)
        else:
            # Eager: that trace guards on every size (B, Tq, Tk, and the mods' captured tensors,
            # whose code is the same each call), so each new shape re-traced (~2 s of ~0.4 s a
            # case). Every size a symbol from the first trace (assume_static_by_default off), 0/1
            # not specialized (backed_size_oblivious): one trace serves every case; flex_attention
            # itself keeps heads and head dims static (mark_static), so a new (Hq, Hkv, D, Dv)
            # traces once. Duck sizing off: sizes that happen to be equal in one case (Tq = Tk)
            # would otherwise be guarded equal. The ops that run are the same: dynamo's "eager"
            # backend replays the graph.
            import torch.fx.experimental._config as fx_config
            torch._dynamo.config.assume_static_by_default = False
            fx_config.backed_size_oblivious = True
            fx_config.use_duck_shape = False
            self.attend = flex_attention

    def __call__(self, q, k, v, call, convention, mask, key_positions):
        batch, tq, tk = q.shape[0], q.shape[2], k.shape[2]
        d = call.descriptor
        heads = q.shape[1]
        dev = self.device
        cap = torch.tensor(float(call.softcap), dtype=torch.float32, device=dev)
        slopes = torch.zeros(heads, dtype=torch.float32, device=dev)
        if convention == "descriptor":
            t = {name: x.to(dev) for name, x in token_layout(d, batch, tq, tk).items()}
            mask_mod = descriptor_mask_mod(d, t)
            # ALiBi as FlashAttention's alibi_slopes: −slope·|diagonal − j| in the sequence
            query_at, key_at = t["q_diag"].float(), t["k_loc"].float()
            if d.alibi_slopes is not None:
                slopes = torch.tensor(np.asarray(d.alibi_slopes, np.float64), dtype=torch.float32, device=dev)
        elif convention == "bool-visible":
            visible = mask

            def mask_mod(b, h, q_idx, kv_idx):
                return visible[b, q_idx, kv_idx]
            query_at = torch.from_numpy(np.asarray(call.query_positions, np.float32)).to(dev)
            key_at = torch.from_numpy(np.asarray(key_positions, np.float32)).to(dev)
        else:
            raise attncheck.Refuse(f"mask convention {convention} is not taken")
        if call.apply_bias:
            if call.encoding.get("kind") != "alibi":
                raise attncheck.Refuse(f"score bias {call.encoding.get('kind')} is not a score_mod here")
            if convention != "descriptor":
                slopes = torch.tensor(alibi_slopes(heads), dtype=torch.float32, device=dev)
        if self.compiled:
            q, k, v, query_at, key_at, slopes = self.pad(q, k, v, query_at, key_at, slopes, self.buckets)
            shape_tokens = (q.shape[2], k.shape[2])
            if convention == "descriptor":
                t = {name: pad_to(x, (q.shape[0], shape_tokens[name.startswith("k")]), -1 if "seq" in name else 0)
                     for name, x in t.items()}
                mask_mod = descriptor_mask_mod(d, t)
            else:
                visible = pad_to(visible, (q.shape[0],) + shape_tokens, False)
        cap_or_one = torch.where(cap > 0, cap, torch.ones((), device=dev))

        def score_mod(score, b, h, q_idx, kv_idx):  # softcap (Gemma 2: cap·tanh(s/cap)), then ALiBi
            capped = torch.where(cap > 0, cap * torch.tanh(score / cap_or_one), score)
            return capped - slopes[h] * torch.abs(query_at[b, q_idx] - key_at[b, kv_idx])

        if not self.compiled:  # eager: the one score_mod too (no cap, no slope: exactly the score)
            q, k, v = self.pad_heads_and_dims(q, k, v)
            slopes = pad_to(slopes, (q.shape[1],))

        block_mask = (create_block_mask(mask_mod, q.shape[0], None, q.shape[2], k.shape[2], device=dev)
                      if self.compiled else whole_grid_block_mask(mask_mod, q.shape[2], k.shape[2]))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # eager: "flex_attention called without torch.compile()"
            out = self.attend(q, k, v, score_mod=score_mod, block_mask=block_mask, scale=call.scale,
                              enable_gqa=q.shape[1] != k.shape[1])
        return out[:batch, :heads, :tq, :call.value_dim]

    @staticmethod
    def pad_heads_and_dims(q, k, v):
        """Eager: flex_attention marks heads and head dims static, so each new (Hq, Hkv, D, Dv)
        re-traces (~2 s): query heads padded to PAD_HEADS keeping the group (Hkv to
        ⌈PAD_HEADS/group⌉, so head h still reads kv head h // group), D and Dv both zero-padded
        to the EAGER_D bucket of the larger (q·k and P·V of the real dims unchanged; padded
        heads and dims sliced off)."""
        group = q.shape[1] // k.shape[1]
        kv_heads = -(-PAD_HEADS // group)
        batch, tq, tk = q.shape[0], q.shape[2], k.shape[2]
        dim = value_dim = bucket(max(q.shape[3], v.shape[3]), EAGER_D)
        return (pad_to(q, (batch, group * kv_heads, tq, dim)), pad_to(k, (batch, kv_heads, tk, dim)),
                pad_to(v, (batch, kv_heads, tk, value_dim)))

    @staticmethod
    def pad(q, k, v, query_at, key_at, slopes, buckets):
        """The call in its static shape bucket (CPU_BUCKETS or CUDA_BUCKETS above, PAD_HEADS;
        a size past the last bucket is its own)."""
        batch, heads = bucket(q.shape[0], buckets["b"]), max(q.shape[1], PAD_HEADS)
        tq, tk = bucket(q.shape[2], buckets["t"]), bucket(k.shape[2], buckets["t"])
        dim = bucket(max(q.shape[3], v.shape[3]), buckets["d"])
        group = q.shape[1] // k.shape[1]
        k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
        q, k, v = (pad_to(x, (batch, heads, t, dim)) for x, t in ((q, tq), (k, tk), (v, tk)))
        return (q, k, v, pad_to(query_at, (batch, tq)), pad_to(key_at, (batch, tk)),
                pad_to(slopes, (heads,)))


# ---- MultiheadAttention -------------------------------------------------------


class Mha:
    """F.multi_head_attention_forward with identity projections (q, k, v pass through;
    out_proj is the identity), the dense mask split the way a model hands it over: keys
    blocked for every query of a row as key_padding_mask [B, Tk] (True = padding), the
    rest as a per-head attn_mask [B·H, Tq, Tk]; MHA merges the two."""

    def __init__(self, need_weights):
        self.need_weights = need_weights

    def __call__(self, q, k, v, call, convention, mask, key_positions):
        batch, heads, tq, dim = q.shape
        if k.shape[1] != heads or v.shape[3] != dim:
            raise attncheck.Refuse("multi_head_attention_forward: one head count and one head dim for q, k, v")
        embed = heads * dim
        if convention == "bool-blocked":
            blocked = mask
            attn_mask = blocked
        elif convention == "add-inf":
            blocked = mask == float("-inf")
            attn_mask = mask.to(q.dtype)
        else:
            raise attncheck.Refuse(f"mask convention {convention} is not taken")
        padding = blocked.all(dim=1)  # [B, Tk]: keys no query of the row may read
        if attn_mask.is_floating_point():  # the same type as attn_mask (mixed types are deprecated)
            padding = torch.zeros(padding.shape, dtype=q.dtype).masked_fill(padding, float("-inf"))
        attn_mask = attn_mask.repeat_interleave(heads, dim=0)  # [B·H, Tq, Tk], batch-major as MHA reshapes
        to_tbe = lambda x: x.permute(2, 0, 1, 3).reshape(x.shape[2], batch, embed)  # [T, B, H·D]
        eye = torch.eye(embed, dtype=q.dtype)
        out, _ = F.multi_head_attention_forward(
            to_tbe(q), to_tbe(k), to_tbe(v), embed, heads,
            in_proj_weight=torch.cat([eye, eye, eye]), in_proj_bias=torch.zeros(3 * embed, dtype=q.dtype),
            bias_k=None, bias_v=None, add_zero_attn=False, dropout_p=0.0,
            out_proj_weight=eye, out_proj_bias=torch.zeros(embed, dtype=q.dtype), training=False,
            key_padding_mask=padding, need_weights=self.need_weights, attn_mask=attn_mask,
            average_attn_weights=False)
        return out.reshape(tq, batch, heads, dim).permute(1, 2, 0, 3)  # [B, H, Tq, D]


# ---- the variants ---------------------------------------------------------------


DEFECT_LSE_ROW = False  # --defect-backward-lse-other-row: each row answers the lse of the row before


def flash_with_lse(q, k, v, call, convention, mask):
    """(output, logsumexp f32 [B, Hq, Tq]) of ATen's CPU flash op, called as SDPA's flash branch
    calls it (attention.cpp): a bool mask as convert_boolean_attn_mask makes it (0 where visible,
    −inf elsewhere, the query's dtype), a float mask and is_causal as they are. The op takes
    Hkv < Hq itself (GQA: query head h reads kv head h // (Hq/Hkv), as enable_gqa; probed in
    torch 2.13 against repeated K/V: outputs and lse equal, dK/dV the group's sum)."""
    attn_mask, is_causal = sdpa_mask(call, convention, mask, q.dtype)
    if attn_mask is not None and attn_mask.dtype == torch.bool:
        attn_mask = torch.zeros(attn_mask.shape, dtype=q.dtype).masked_fill(~attn_mask, float("-inf"))
    out, lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
        q, k, v, 0.0, is_causal, attn_mask=attn_mask, scale=call.scale)
    return out, (torch.roll(lse, 1, dims=2) if DEFECT_LSE_ROW else lse)


def math_sdpa(q, k, v, call, convention, mask, key_positions):
    return run_sdpa(SDPBackend.MATH, q, k, v, call, convention, mask)


def flash_sdpa(q, k, v, call, convention, mask, key_positions):
    return run_sdpa(SDPBackend.FLASH_ATTENTION, q, k, v, call, convention, mask)


flash_sdpa.with_lse = flash_with_lse


def make_variants():
    variants = {}
    for dtype in ("f32", "bf16", "f16"):
        variants[f"sdpa-math-{dtype}"] = (
            lambda: math_sdpa, lambda d=dtype: sdpa_capabilities(d, flash=False),
            f"F.scaled_dot_product_attention, sdpa_kernel([SDPBackend.MATH]), {dtype}")
        variants[f"sdpa-flash-{dtype}"] = (
            lambda: flash_sdpa, lambda d=dtype: sdpa_capabilities(d, flash=True),
            f"F.scaled_dot_product_attention, sdpa_kernel([SDPBackend.FLASH_ATTENTION]) (ATen CPU flash), {dtype}")
    for dtype in ("f32", "bf16"):
        variants[f"flex-eager-{dtype}"] = (
            lambda: Flex(compiled=False), lambda d=dtype: flex_capabilities(d),
            f"flex_attention eager (mask_mod/BlockMask, score_mod), {dtype}")
        variants[f"flex-compiled-{dtype}"] = (
            lambda: Flex(compiled=True), lambda d=dtype: flex_capabilities(d),
            f"torch.compile(flex_attention), Inductor CPU, static shape buckets, {dtype}")
    for dtype in ("f16", "bf16"):
        for kind, spec in CUDA_SDPA.items():
            variants[f"cuda-sdpa-{kind}-{dtype}"] = (
                lambda b=getattr(SDPBackend, spec["backend"]): lambda q, k, v, call, convention, mask, key_positions:
                    run_sdpa(b, q, k, v, call, convention, mask),
                lambda d=dtype, kind=kind: cuda_sdpa_capabilities(d, kind),
                f"F.scaled_dot_product_attention, sdpa_kernel([SDPBackend.{spec['backend']}]), {dtype}")
        variants[f"cuda-flex-compiled-{dtype}"] = (
            lambda: Flex(compiled=True, device="cuda"), lambda d=dtype: flex_capabilities(d, cuda=True),
            f"torch.compile(flex_attention), Inductor's Triton template, static shape buckets, {dtype}")
    variants["mha-f32"] = (lambda: Mha(need_weights=False), lambda: mha_capabilities("f32"),
                           "F.multi_head_attention_forward, key_padding_mask + attn_mask, need_weights=False, f32")
    variants["mha-weights-f32"] = (lambda: Mha(need_weights=True), lambda: mha_capabilities("f32"),
                                   "F.multi_head_attention_forward, need_weights=True (its own softmax), f32")
    return variants


VARIANTS = make_variants()


class Session:
    """The kernel every call runs; the KV cache of a session is the kit's (concatenated keys)."""
    kernel = None
    backward_lse = False  # the variant declares backward_lse (main)
    device = torch.device("cpu")  # cuda for the cuda-* variants: inputs go there, outputs come back


def call_mask(call):
    mask = call.mask
    if isinstance(mask, np.ndarray):
        mask = torch.from_numpy(mask)
    return mask.to(Session.device) if mask is not None else None


def run(q, k, v, call, key_positions):
    mask = call_mask(call)
    q, k, v = (x.to(Session.device) for x in (q, k, v))
    with torch.no_grad():
        out = Session.kernel(q, k, v, call, call.mask_convention, mask, key_positions)
    return out.float()


def attention(call):
    if call.descriptor is not None and call.descriptor.paged:
        raise attncheck.Refuse("paged K/V is not declared")
    return run(call.q, call.k, call.v, call, call.key_positions)


def bits(x):
    """x's bit patterns (NaN from a poisoned slot compares equal to itself)."""
    return x.contiguous().view({8: torch.int64, 4: torch.int32, 2: torch.int16}[x.element_size()])


def backward(call, dout):
    """The variant's own backward: torch.autograd through the same call, dO in the
    call's dtype; the gradients of q, k and v as the call holds them (GQA's sum over a
    group is autograd's, through enable_gqa's repeat or the flash kernel's own). A flash
    variant runs SDPA first (its refusals, and the output users get), then ATen's flash op
    directly for its logsumexp: the two outputs must have the same bits (one kernel)."""
    mask = call_mask(call)
    with_lse = getattr(Session.kernel, "with_lse", None)
    if with_lse is not None:
        with torch.no_grad():
            users = Session.kernel(call.q, call.k, call.v, call, call.mask_convention, mask, call.key_positions)
    q, k, v = (x.detach().to(Session.device).clone().requires_grad_(True) for x in (call.q, call.k, call.v))
    with torch.enable_grad():
        if with_lse is None:
            out, lse = Session.kernel(q, k, v, call, call.mask_convention, mask, call.key_positions), None
        else:
            out, lse = with_lse(q, k, v, call, call.mask_convention, mask)
            if not torch.equal(bits(out.detach()), bits(users)):
                raise RuntimeError("_scaled_dot_product_flash_attention_for_cpu's output differs from SDPA's "
                                   "FLASH_ATTENTION output: the lse is not the kernel users run")
        out.backward(dout.to(device=out.device, dtype=out.dtype))
    grads = tuple(x.grad if x.grad is not None else torch.zeros_like(x) for x in (q, k, v))
    # the lse only where the variant declares it (f32: see sdpa_capabilities)
    return grads if lse is None or not Session.backward_lse else grads + (lse.detach(),)


def main():
    global DEFECT_WINDOW, DEFECT_LSE_ROW
    args = backend_arguments(__doc__, VARIANTS, defects=("backward-lse-other-row",))
    DEFECT_WINDOW = args.defect_window_one_wider
    DEFECT_LSE_ROW = args.defect_backward_lse_other_row
    warnings.simplefilter("ignore")  # library chatter on stderr; run_sdpa records its own
    torch.set_num_threads(1)  # bitwise repeatable runs; the harness runs its own workers
    # 348 cuDNN refusals of the H200 gate came with no reason after the first of their kind:
    # likely reasons given with TORCH_WARN_ONCE, which torch.set_warn_always turns into a warning
    # on every call (the CPU flash kernel's reasons repeat either way; not yet seen on a GPU)
    torch.set_warn_always(True)
    make_kernel, capabilities, description = VARIANTS[args.variant]
    where = "CPU"
    if args.variant.startswith("cuda-"):
        if not torch.cuda.is_available():
            print(f"torch-{args.variant}: torch {torch.__version__} sees no CUDA device "
                  f"(torch.cuda.is_available() is False); the cuda-* variants need a torch built with CUDA "
                  f"and an NVIDIA GPU", file=sys.stderr)
            return 2
        Session.device = torch.device("cuda")
        where = f"CUDA {torch.version.cuda} on {torch.cuda.get_device_name(0)}"
    Session.kernel = make_kernel()
    Session.backward_lse = bool(capabilities().get("backward_lse"))
    return attncheck.serve(
        attention, name=f"torch-{args.variant}",
        description=f"torch {torch.__version__} {where}: {description}",
        capabilities=capabilities(), versions={"torch": torch.__version__.split("+")[0]},
        session=kv_cache_session(run, lambda xs, axis: torch.cat(xs, dim=axis)), tensors="torch",
        native_dtype=True, backward=backward if capabilities().get("has_backward") else None)


if __name__ == "__main__":
    sys.exit(main())
