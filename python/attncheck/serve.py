"""serve(): the backend loop. Shakes hands (protocol 2), turns each request into an
AttentionCall / RopeCall / session call for the user's function, converts the
tensors it is given and the one it returns, and answers every failure with an
error message instead of dying."""

import os
import sys
import traceback

import numpy as np

from .descriptor import Descriptor
from .keys import check_capabilities
from .numerics import bf16_bits, from_bf16_bits
from .wire import PROTOCOL, FramingError, read_message, write_message


class Refuse(Exception):
    """Raised from a callback: the kernel does not take this case (a shape or layout
    it has no path for). The law is skipped with "refused: <reason>"."""

    def __init__(self, reason):
        super().__init__(reason)
        self.reason = str(reason)


class _ReadOnly:
    """Attributes set once at construction; assigning later is an AttributeError."""

    def __init__(self, **fields):
        self.__dict__.update(fields)

    def __setattr__(self, name, value):
        raise AttributeError(f"{type(self).__name__}.{name} is read-only")

    def __repr__(self):
        shown = ", ".join(f"{k}={v!r}" for k, v in self.__dict__.items() if not hasattr(v, "shape") and k != "header")
        return f"{type(self).__name__}({shown})"


class AttentionCall(_ReadOnly):
    """One attention call (or one session step); see the kit's README for the fields."""


class RopeCall(_ReadOnly):
    """One rope-stage call: x [B, H, T, D], positions [B, T], rope, ..."""


class SessionSpec(_ReadOnly):
    """What session_open tells a session: shapes, dtype, scale, softcap, encoding, rope, ..."""


# The header fields a session_open carries, which each of its steps inherits.
_SPEC_FIELDS = ("batch", "q_heads", "kv_heads", "head_dim", "value_dim", "dtype", "scale", "softcap",
                "apply_positional", "apply_bias", "current_length", "encoding", "weights_seed", "rope")


# An error answer's message: the exception's type, its first line and, where a compiler
# log follows (Inductor's run to hundreds of kB), the first line that says "error:".
_ERROR_LINE_CHARS = 300


def _error_text(e):
    text = str(e)
    lines = text.splitlines()
    first = lines[0] if lines else ""
    message = f"{type(e).__name__}: {first[:_ERROR_LINE_CHARS]}{' …' if len(first) > _ERROR_LINE_CHARS else ''}"
    error_line = next((line.strip() for line in lines[1:] if "error:" in line), "")
    if error_line:
        message += f" | {error_line[:_ERROR_LINE_CHARS]}"
    if len(text) > len(first):
        message += f" ({len(text)} characters in all; ATTNCHECK_KIT_TRACEBACK=1 prints them on stderr)"
    return message


def _is_torch(x):
    return type(x).__module__.split(".")[0] == "torch"


class _Converter:
    """Tensors in (wire float32 / u8) to what the kernel asked for, and its answer back
    to float32: one place for the tensors= and native_dtype= choices."""

    def __init__(self, tensors, native_dtype):
        if tensors not in ("numpy", "torch"):
            raise ValueError(f"tensors={tensors!r}: expected 'numpy' or 'torch'")
        self.torch = None
        if tensors == "torch":
            import torch
            self.torch = torch
        self.native = bool(native_dtype)

    def values(self, array, dtype):
        """q/k/v/x: float32 holding the case dtype's values, or the dtype itself when native."""
        if array is None:
            return None
        if self.torch is not None:
            t = self.torch.from_numpy(np.array(array, dtype=np.float32))
            if self.native and dtype != "f32":
                t = t.to({"f16": self.torch.float16, "bf16": self.torch.bfloat16}[dtype])
            return t
        if self.native and dtype == "f16":
            return array.astype(np.float16)
        if self.native and dtype == "bf16":
            return bf16_bits(array)
        return np.array(array, dtype=np.float32)  # writable, owned

    def mask(self, array):
        if array is None:
            return None
        mask = array != 0 if array.dtype == np.uint8 else np.array(array, dtype=np.float32)
        return self.torch.from_numpy(mask) if self.torch is not None else mask

    def answer(self, out, dtype, expected, layout):
        """The callback's result as float32 numpy of the expected shape (layout names its axes)."""
        if _is_torch(out):
            out = out.detach().to("cpu").float().numpy()
        out = np.asarray(out)
        if out.dtype == np.uint16 and dtype == "bf16" and self.native:
            out = from_bf16_bits(out)
        elif out.dtype.kind != "f":
            raise TypeError(f"out has dtype {out.dtype}, expected a float array")
        if tuple(out.shape) != tuple(expected):
            raise ValueError(f"out has shape {list(out.shape)}, expected {layout} = {list(expected)}")
        return out.astype(np.float32, copy=False)


class _Server:
    def __init__(self, attention, name, description, capabilities, versions, rope, session, convert, backward=None):
        self.attention_fn, self.rope_fn, self.session_cls = attention, rope, session
        self.backward_fn = backward
        self.name, self.description, self.versions = name, description, versions
        self.caps, self.convert = capabilities, convert
        self.sessions = {}

    def op_hello(self, h, t):
        answer = {"op": "hello", "protocol": PROTOCOL, "name": self.name, "description": self.description,
                  "capabilities": self.caps}
        if self.versions:
            answer["versions"] = {str(k): str(v) for k, v in self.versions.items()}
        return answer, []

    def _call(self, h, t, spec, q, k, v, query_positions, key_positions, tk):
        dtype = spec["dtype"]
        d = h.get("descriptor")
        fields = {f: spec.get(f) for f in _SPEC_FIELDS}
        fields.update(
            q=self.convert.values(q, dtype), k=self.convert.values(k, dtype), v=self.convert.values(v, dtype),
            mask=self.convert.mask(t.get("mask")), mask_convention=h["mask_convention"],
            descriptor=Descriptor(d) if d is not None else None, query_positions=query_positions,
            key_positions=key_positions, query_scale=t.get("query_scale"), tq=h["tq"], tk=tk, header=h)
        return AttentionCall(**fields)

    def _result(self, out, dtype, shape, layout="[B, Hq, Tq, Dv]"):
        return {"op": "result"}, [("out", self.convert.answer(out, dtype, shape, layout))]

    def op_attention(self, h, t):
        call = self._call(h, t, h, t["q"], t["k"], t["v"], t["query_positions"], t["key_positions"], h["tk"])
        out = self.attention_fn(call)
        return self._result(out, h["dtype"], (h["batch"], h["q_heads"], h["tq"], h["value_dim"]))

    def op_backward(self, h, t):
        if self.backward_fn is None:
            raise ValueError("this backend has no backward (serve(backward=...))")
        call = self._call(h, t, h, t["q"], t["k"], t["v"], t["query_positions"], t["key_positions"], h["tk"])
        saved = {}
        if self.caps.get("backward_saved", False):  # the forward's saved output (case dtype) and lse (f32)
            saved = {"out": self.convert.values(t["out"], h["dtype"]), "lse": self.convert.values(t["lse"], "f32")}
        grads = tuple(self.backward_fn(call, self.convert.values(t["dout"], h["dtype"]), **saved))
        lse = bool(self.caps.get("backward_lse", False))
        if len(grads) != (4 if lse else 3):
            raise ValueError(f"backward returned {len(grads)} arrays, expected (dq, dk, dv{', lse' if lse else ''})"
                             f"{' (backward_lse is declared)' if lse else ''}")
        b, hq, hkv, tq, tk = h["batch"], h["q_heads"], h["kv_heads"], h["tq"], h["tk"]
        answer = [
            ("dq", self.convert.answer(grads[0], h["dtype"], (b, hq, tq, h["head_dim"]), "dq [B, Hq, Tq, D]")),
            ("dk", self.convert.answer(grads[1], h["dtype"], (b, hkv, tk, h["head_dim"]), "dk [B, Hkv, Tk, D]")),
            ("dv", self.convert.answer(grads[2], h["dtype"], (b, hkv, tk, h["value_dim"]), "dv [B, Hkv, Tk, Dv]"))]
        if lse:  # the forward's log-sum-exp, float32 whatever the case dtype
            answer.append(("lse", self.convert.answer(grads[3], "f32", (b, hq, tq), "lse [B, Hq, Tq]")))
        return {"op": "result"}, answer

    def op_rope(self, h, t):
        if self.rope_fn is None:
            raise ValueError("this backend has no rope stage (serve(rope=...))")
        x = t["x"]
        call = RopeCall(x=self.convert.values(x, h["dtype"]), positions=t["positions"], rope=h.get("rope"),
                        batch=h["batch"], heads=h["heads"], tokens=h["tokens"], head_dim=h["head_dim"],
                        dtype=h["dtype"], current_length=h["current_length"], encoding=h.get("encoding"), header=h)
        return self._result(self.rope_fn(call), h["dtype"], x.shape, "[B, H, T, D]")

    def op_session_open(self, h, t):
        if self.session_cls is None:
            raise ValueError("this backend has no sessions (serve(session=...))")
        spec = SessionSpec(**{f: h.get(f) for f in _SPEC_FIELDS}, header=h)
        # The positions of the keys appended so far, one array [B, n] per append: each
        # step's call gets them as key_positions [B, tk], as a one-shot call does.
        self.sessions[h["session"]] = (spec, self.session_cls(spec), [])
        return {"op": "ok"}, []

    def _session(self, h):
        if h.get("session") not in self.sessions:
            raise ValueError(f"no open session {h.get('session')!r}")
        return self.sessions[h["session"]]

    def op_session_append(self, h, t):
        spec, s, appended = self._session(h)
        s.append(self.convert.values(t["k"], spec.dtype), self.convert.values(t["v"], spec.dtype), t["positions"])
        appended.append(np.asarray(t["positions"], dtype=np.int32))
        return {"op": "ok"}, []

    def op_session_attend(self, h, t):
        spec, s, appended = self._session(h)
        key_positions = (np.concatenate(appended, axis=1) if appended
                         else np.zeros((spec.batch, 0), dtype=np.int32))
        if key_positions.shape[1] != h["tk"]:
            raise ValueError(f"session_attend says tk={h['tk']}, but {key_positions.shape[1]} keys were appended")
        fields = dict(spec.__dict__)
        call = self._call(h, t, fields, t["q"], None, None, t["positions"], key_positions, h["tk"])
        out = s.attend(call)
        return self._result(out, spec.dtype, (spec.batch, spec.q_heads, h["tq"], spec.value_dim))

    def op_session_close(self, h, t):
        entry = self.sessions.pop(h.get("session"), None)
        if entry is not None and hasattr(entry[1], "close"):
            entry[1].close()
        return {"op": "ok"}, []

    def answer(self, header, tensors):
        op = header.get("op")
        handler = getattr(self, f"op_{op}", None) if isinstance(op, str) else None
        try:
            if handler is None:
                raise ValueError(f"unknown op {op!r}")
            return handler(header, tensors)
        except Refuse as e:
            return {"op": "error", "kind": "refused", "message": e.reason}, []
        except Exception as e:  # noqa: BLE001 — every failure is answered; the backend stays up
            if os.environ.get("ATTNCHECK_KIT_TRACEBACK"):
                traceback.print_exc(file=sys.stderr)
            return {"op": "error", "message": _error_text(e)}, []


def _declared(caps, rope, session, backward=None):
    """The hello's capabilities: the stages given imply has_rope_stage/has_session/has_backward;
    a stage declared without its function is a usage error."""
    caps = dict(check_capabilities(caps if caps is not None else {}))
    for key, given, argument in (("has_rope_stage", rope, "rope"), ("has_session", session, "session"),
                                 ("has_backward", backward, "backward")):
        if key not in caps:
            caps[key] = given is not None
        elif caps[key] and given is None:
            raise ValueError(f"capabilities.{key} is true but serve() was given no {argument}=")
    # A session that attends through the attention call itself (kv_cache_session) rotates
    # every token as one call does.
    if "session_rope_as_call" not in caps and getattr(session, "rope_as_call", False):
        caps["session_rope_as_call"] = True
    return caps


def _protocol_stdout():
    """The protocol's own copy of file descriptor 1; fd 1 itself (print(), a C
    library's printf) then goes to stderr, so nothing the kernel prints can break
    the framing."""
    sys.stdout.flush()
    protocol_fd = os.dup(1)
    os.dup2(2, 1)
    return os.fdopen(protocol_fd, "wb")


def serve(attention, name="python-kernel", description="a Python kernel served by the attncheck kit",
          capabilities=None, versions=None, rope=None, session=None, tensors="numpy", native_dtype=False,
          stdin=None, stdout=None, backward=None):
    """Answer the harness's requests on stdin/stdout until shutdown or end of input.
    Returns the exit status: 0, or 2 for a usage error (bad capabilities, stdin that
    breaks the framing), with one line on stderr."""
    try:
        caps = _declared(capabilities, rope, session, backward)
        server = _Server(attention, name, description, caps, versions, rope, session,
                         _Converter(tensors, native_dtype), backward)
    except (TypeError, ValueError, ImportError) as e:
        sys.stderr.write(f"attncheck.serve ({name}): {e}\n")
        return 2
    stdin = stdin if stdin is not None else sys.stdin.buffer
    if stdout is None:
        stdout = _protocol_stdout()
    while True:
        try:
            message = read_message(stdin)
        except (FramingError, ValueError) as e:
            sys.stderr.write(f"attncheck.serve ({name}): {e}\n")
            return 2
        if message is None or message[0].get("op") == "shutdown":
            return 0
        answer, out = server.answer(*message)
        write_message(stdout, answer, out)
