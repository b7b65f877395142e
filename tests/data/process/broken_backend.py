#!/usr/bin/env python3
"""A process backend that breaks the protocol on purpose (tests/process_test.cc).

    broken_backend.py MODE

It answers hello correctly (declaring float32, additive -inf masks only), then
answers every attention request in the way MODE names:
  oversize     a length prefix of 2^31 bytes
  bad-json     a header that is not JSON
  short        a header stating 1000 floats, then 8 bytes and exit
  wrong-op     {"op": "surprise"}
  exit         exit with status 7 without answering
  error        {"op": "error", "message": "cuda out of memory"}
Standard library only.
"""
import json
import struct
import sys


def read_exact(n):
    data = b""
    while len(data) < n:
        chunk = sys.stdin.buffer.read(n - len(data))
        if not chunk:
            sys.exit(0)
        data += chunk
    return data


def read_message():
    (length,) = struct.unpack("<I", read_exact(4))
    header = json.loads(read_exact(length))
    sizes = {"f32": 4, "i32": 4, "u8": 1}
    for t in header.get("tensors", []):
        count = 1
        for d in t["shape"]:
            count *= d
        read_exact(count * sizes[t["dtype"]])
    return header


def send(raw):
    sys.stdout.buffer.write(raw)
    sys.stdout.buffer.flush()


def send_header(header):
    text = json.dumps(header).encode()
    send(struct.pack("<I", len(text)) + text)


def main():
    mode = sys.argv[1]
    while True:
        header = read_message()
        op = header["op"]
        if op == "shutdown":
            return 0
        if op == "hello":
            send_header({"op": "hello", "protocol": 1, "name": "broken-" + mode,
                         "capabilities": {"dtypes": ["f32"], "masks": ["add-inf"], "encodings": ["none"],
                                          "masked_rows": "zeros"}})
        elif mode == "oversize":
            send(struct.pack("<I", 1 << 31))
        elif mode == "bad-json":
            send(struct.pack("<I", 5) + b"{nope")
        elif mode == "short":
            text = json.dumps({"op": "result", "tensors": [{"name": "out", "dtype": "f32", "shape": [1000]}]}).encode()
            send(struct.pack("<I", len(text)) + text + b"\0" * 8)
            return 0
        elif mode == "wrong-op":
            send_header({"op": "surprise"})
        elif mode == "exit":
            return 7
        elif mode == "error":
            send_header({"op": "error", "message": "cuda out of memory"})


if __name__ == "__main__":
    sys.exit(main())
