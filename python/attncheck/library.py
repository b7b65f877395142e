"""What backends over an attention library share (adapters/torch, adapters/jax): the
encodings the harness applies for a kernel that owns none, the shapes drawn, the
accuracy profiles, and a KV cache kept as a user keeps one for a plain function."""

from .keys import ENCODINGS, ROPE_SCALINGS, capabilities

# RoPE rotates q and k before the call; a score bias arrives folded into the additive mask.
HARNESS_ENCODINGS = list(ENCODINGS)
ALL_ROPE_SCALINGS = list(ROPE_SCALINGS)

# Small cases plus a size tier: 10 % of cases at Tq 64–256, Tk 256–512, D 64/128.
LIMITS = {"max_batch": 3, "max_heads": 4, "max_tokens": 40, "max_head_dim": 32,
          "size_tier": {"percent": 10, "max_tokens": 512, "max_query_len": 256, "max_head_dim": 128,
                        "max_heads": 4, "max_batch": 1}}

# q·k and P·V accumulate in f32 and nothing is stored in the input dtype between steps;
# or the same with the probabilities P rounded to the input dtype before P·V.
F32_THROUGHOUT = {"score_accum": "f32", "pv_accum": "f32", "scores_in_input_dtype": False,
                  "p_in_input_dtype": False}
P_IN_INPUT_DTYPE = dict(F32_THROUGHOUT, p_in_input_dtype=True)


def library_capabilities(dtype, **contract):
    """attncheck.capabilities(...) of a backend over a library function: one dtype, no
    RoPE or rope stage of its own, a session (kv_cache_session), the shapes of LIMITS;
    `contract` declares the rest and may override any of these (owns_bias=True)."""
    return capabilities(**{"owns_rope": False, "owns_bias": False, "has_rope_stage": False, "has_session": True,
                           "dtypes": [dtype], **LIMITS, **contract})


def kv_cache_session(run, concat):
    """A session class for serve(session=...): appended K/V joined along the key axis
    with concat(list, axis), each step one run(q, k, v, call, key_positions) over every
    key so far with the step's own mask or descriptor (the kit hands the step the
    positions of every key appended, call.key_positions [B, tk]). Each step is the call
    itself, so each token is rotated at its position as one call rotates it: serve()
    declares session_rope_as_call for it (a capabilities dict may still say false)."""

    class KvCache:
        rope_as_call = True  # read by serve(): the session_rope_as_call contract key

        def __init__(self, spec):
            self.k, self.v = [], []

        def append(self, k, v, positions):
            self.k.append(k)
            self.v.append(v)

        def attend(self, call):
            return run(call.q, concat(self.k, 2), concat(self.v, 2), call, call.key_positions)

    return KvCache


def backend_arguments(doc, variants, defects=()):
    """The command line of a library backend: --variant (one of `variants`),
    --defect-window-one-wider (the one-line slip the tests plant in its window) and a
    --defect-NAME flag for each of the backend's own `defects`."""
    import argparse
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--variant", required=True, choices=sorted(variants))
    for defect in ("window-one-wider", *defects):
        parser.add_argument(f"--defect-{defect}", action="store_true")
    return parser.parse_args()
