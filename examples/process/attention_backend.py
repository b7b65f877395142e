#!/usr/bin/env python3
"""An attncheck process backend: float32 attention in numpy, served by the kit.

Run it under the harness (it speaks on stdin/stdout, logs go to stderr):

    attncheck gate --adapter 'exec:/usr/bin/python3 examples/process/attention_backend.py'

The kit (python/attncheck, `pip install ./python`; found in the source tree
without installing) speaks the protocol of adapters/process/PROTOCOL.md; this
file is the kernel and its declared capabilities, the same as the in-tree
`eigen` kernel's: float32; additive and bool masks and the visibility descriptor
(protocol 2: FlashAttention's padded-batch forms, computed into a mask here);
RoPE with every layout and scaling applied by the backend itself (the harness
sends the frequencies), score biases folded into the additive mask by the
harness; a rotation stage; cached-decode sessions; GQA; softcap; fully masked
rows answer zeros.

With --descriptor it runs in descriptor mode: no mask tensor ever, the
"descriptor" convention only (bottom-right causal, window,
seqused_q/seqused_k/leftpad_k, prefix, chunk, softcap); it computes the
visibility from the descriptor itself. With --descriptor --varlen it takes
FlashAttention's varlen forms instead (flash_attn_varlen_func): the documents
packed on one token axis, batch 1, sequences through cu_seqlens_q/k. With
--descriptor --paged (with or without --varlen) it also takes the paged form,
page size 16 (flash_attn_with_kvcache's block_table): k and v arrive as pages
[num_pages, Hkv, page_size, D] and are read through the block table.
--defect-block-table-row0 (with --paged) is a deliberate slip for the tests:
every sequence reads row 0 of the block table.
"""

import os
import sys

try:
    import numpy as np  # noqa: F401 — the kit needs it; say so plainly when it is missing
except ImportError:
    sys.stderr.write(f"attention_backend.py: numpy is not installed for {sys.executable} "
                     "(Debian: apt-get install python3-numpy, then run it with /usr/bin/python3)\n")
    sys.exit(1)
# The kit of this source tree (<repo>/python/attncheck) before an installed one, which may be older; a copy of
# this file elsewhere uses the installed kit or PYTHONPATH.
TREE_KIT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python")
if os.path.isfile(os.path.join(TREE_KIT, "attncheck", "serve.py")):
    sys.path.insert(0, TREE_KIT)
import attncheck  # noqa: E402

FLAGS = set(sys.argv[1:])
FORMS = ["causal_bottom_right", "window", "seqused_q", "seqused_k", "leftpad_k", "prefix", "chunk", "softcap"]
if "--varlen" in FLAGS:
    FORMS = ["causal_bottom_right", "window", "varlen", "prefix", "chunk", "softcap"]
PAGED = "--paged" in FLAGS
ROW0_DEFECT = "--defect-block-table-row0" in FLAGS

CAPABILITIES = attncheck.capabilities(
    owns_rope=True,
    owns_bias=False,
    dtypes=["f32"],
    masks=(["descriptor"] if "--descriptor" in FLAGS else
           ["add-inf", "add-lowest", "add-1e4", "add-1e9", "bool-visible", "bool-blocked", "descriptor"]),
    descriptor_forms=FORMS + (["paged"] if PAGED else []),
    **({"page_size": 16} if PAGED else {}),
    masked_rows="zeros",
    encodings=["none", "rope", "alibi", "t5", "kerple", "sandwich"],
    rope_layouts=["half-split", "interleaved"],
    rope_scalings=["none", "linear", "ntk-aware", "dynamic-ntk", "yarn", "llama3", "ntk-mixed", "yarn-paper"],
    gqa=True,
    softcap=True,
    value_dim_differs=True,
    queries_beyond_keys=True,
    session_rope_as_call=True,  # Session rotates with attncheck.rotate, as attention() does
)


def no_bias(spec):
    if spec.apply_bias:
        raise ValueError("this backend does not apply score biases itself")


def attention(call):
    no_bias(call)
    k, v, d = call.k, call.v, call.descriptor
    if d is not None and d.paged:  # K/V in pages: back onto the logical key axis
        if ROW0_DEFECT:  # the planted slip: every sequence reads row 0 of the block table
            d = attncheck.Descriptor(dict(d.raw, block_table=[int(p) for p in d.block_table[0]] * d.num_sequences))
        k, v = (d.unpage(x, call.batch, call.tk) for x in (k, v))
    q = call.q
    if call.rope:
        q = attncheck.rotate(q, call.query_positions, call.rope, call.query_scale)
        k = attncheck.rotate(k, call.key_positions, call.rope)
    blocked, bias = attncheck.additive_blocked(call)
    return attncheck.reference_attention(q, k, v, blocked, bias, call.scale, call.softcap)


def rope(call):
    return attncheck.rotate(call.x, call.positions, call.rope)


class Session:
    """A cached-decode session: keys rotated as they are appended, each step attends to all so far."""

    def __init__(self, spec):
        no_bias(spec)
        self.spec, self.k, self.v = spec, [], []

    def append(self, k, v, positions):
        self.k.append(attncheck.rotate(k, positions, self.spec.rope) if self.spec.rope else k)
        self.v.append(v)

    def attend(self, call):
        q = call.q
        if self.spec.rope:
            q = attncheck.rotate(q, call.query_positions, self.spec.rope, call.query_scale)
        blocked, bias = attncheck.additive_blocked(call)
        return attncheck.reference_attention(q, np.concatenate(self.k, axis=2), np.concatenate(self.v, axis=2),
                                             blocked, bias, self.spec.scale, self.spec.softcap)


if __name__ == "__main__":
    sys.exit(attncheck.serve(attention, name="numpy-attention",
                             description="float32 numpy attention (examples/process/attention_backend.py)",
                             capabilities=CAPABILITIES, rope=rope, session=Session))
