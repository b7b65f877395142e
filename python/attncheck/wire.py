"""The framing of the process protocol (adapters/process/PROTOCOL.md): a 4-byte
little-endian header length, the JSON header, then the tensors its "tensors"
list names, raw little-endian and back to back."""

import json
import struct

import numpy as np

PROTOCOL = 2
MAX_HEADER = 1 << 20
WIRE_DTYPES = {"f32": np.dtype("<f4"), "i32": np.dtype("<i4"), "u8": np.dtype("u1")}
_WIRE_NAMES = {v: k for k, v in WIRE_DTYPES.items()}


class FramingError(Exception):
    """The input stream broke the framing (the backend cannot go on)."""


def _read_exact(stream, n):
    buffer = bytearray(n)
    view = memoryview(buffer)
    got = 0
    while got < n:
        read = stream.readinto(view[got:])
        if not read:
            return None if got == 0 else bytes(buffer[:got])
        got += read
    return buffer


def read_message(stream):
    """(header, {name: numpy array}) or None at the end of input."""
    prefix = _read_exact(stream, 4)
    if prefix is None:
        return None
    if len(prefix) < 4:
        raise FramingError("input ended inside a length prefix")
    (length,) = struct.unpack("<I", prefix)
    if length == 0 or length > MAX_HEADER:
        raise FramingError(f"header length {length} out of range (1 to {MAX_HEADER})")
    text = _read_exact(stream, length)
    if text is None or len(text) < length:
        raise FramingError("input ended inside a header")
    header = json.loads(bytes(text))
    if not isinstance(header, dict):
        raise FramingError("the header is not a JSON object")
    tensors = {}
    for t in header.pop("tensors", []):
        if t.get("dtype") not in WIRE_DTYPES:
            raise FramingError(f"tensor {t.get('name')!r}: unknown dtype {t.get('dtype')!r}")
        dtype = WIRE_DTYPES[t["dtype"]]
        shape = tuple(int(d) for d in t["shape"])
        size = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        raw = _read_exact(stream, size) if size else bytearray()
        if raw is None or len(raw) < size:
            raise FramingError(f"input ended inside tensor {t['name']!r}")
        tensors[t["name"]] = np.frombuffer(raw, dtype=dtype).reshape(shape)
    return header, tensors


def encode_message(header, tensors=()):
    """The bytes of one message; tensors: (name, numpy array of f32, i32 or u8) pairs."""
    listed, payload = [], []
    for name, array in tensors:
        array = np.ascontiguousarray(array)
        wire = _WIRE_NAMES.get(array.dtype.newbyteorder("<"))
        if wire is None:
            raise TypeError(f"tensor {name!r}: dtype {array.dtype} is not one of f32, i32, u8")
        listed.append({"name": name, "dtype": wire, "shape": list(array.shape)})
        payload.append(array.astype(WIRE_DTYPES[wire], copy=False).tobytes())
    if listed:
        header = dict(header, tensors=listed)
    text = json.dumps(header).encode()
    if len(text) > MAX_HEADER:
        raise ValueError(f"header of {len(text)} bytes exceeds {MAX_HEADER}")
    return struct.pack("<I", len(text)) + text + b"".join(payload)


def write_message(stream, header, tensors=()):
    stream.write(encode_message(header, tensors))
    stream.flush()
