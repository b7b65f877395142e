"""attncheck: serve an attention kernel to the attncheck harness.

    import attncheck

    def attention(call):            # call.q [B,Hq,Tq,D], call.k, call.v, call.mask, ...
        return out                  # [B, Hq, Tq, Dv], numpy or torch

    sys.exit(attncheck.serve(attention, name="my-kernel",
                             capabilities=attncheck.capabilities(masks=["bool-visible"])))

It speaks the process protocol (adapters/process/PROTOCOL.md, version 2) on
stdin/stdout; gate it with `attncheck gate --adapter 'exec:python3 my_kernel.py'`.
"""

from .descriptor import Descriptor
from .keys import KEYS, Key, capabilities, defaults
from .numerics import bf16_bits, blocked_and_bias, from_bf16_bits, reference_attention, rotate
from .serve import AttentionCall, Refuse, RopeCall, SessionSpec, serve
from .wire import PROTOCOL


def additive_blocked(call):
    """(blocked bool [B, Tq, Tk], bias float32 [B, Tq, Tk]) of a call in any mask
    convention, the descriptor's included; a torch mask is read as numpy."""
    mask = call.mask
    if mask is not None and type(mask).__module__.split(".")[0] == "torch":
        mask = mask.detach().cpu().numpy()
    return blocked_and_bias(call.mask_convention, mask, (call.batch, call.tq, call.tk), call.descriptor)


__all__ = ["AttentionCall", "Descriptor", "KEYS", "Key", "PROTOCOL", "Refuse", "RopeCall", "SessionSpec",
           "additive_blocked", "bf16_bits", "capabilities", "defaults", "from_bf16_bits", "reference_attention",
           "rotate", "serve"]
