#!/usr/bin/env python3
"""An f16 process backend that leaves xPos to the harness (tests/case_state_test.cc).

    xpos_f16_backend.py

It declares float16 cases with no encoding or xPos, which it does not own: the
harness encodes q and k and refuses the cases whose encoded keys overflow f16.
Every attention request is answered with zeros (non-interference holds on it).
Standard library only.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from broken_backend import read_message, send, send_header  # noqa: E402  (the protocol's framing)


def main():
    while True:
        header = read_message()
        op = header["op"]
        if op == "shutdown":
            return 0
        if op == "hello":
            send_header({"op": "hello", "protocol": 1, "name": "xpos-f16",
                         "capabilities": {"owns_rope": False, "has_rope_stage": False, "has_session": False,
                                          "dtypes": ["f16"], "masks": ["add-inf"], "encodings": ["none", "xpos"],
                                          "masked_rows": "zeros"}})
        elif op == "attention":
            shape = [header["batch"], header["q_heads"], header["tq"], header["value_dim"]]
            count = shape[0] * shape[1] * shape[2] * shape[3]
            send_header({"op": "result", "tensors": [{"name": "out", "dtype": "f32", "shape": shape}]})
            send(b"\0" * (4 * count))
        else:
            send_header({"op": "error", "message": "xpos_f16_backend.py: no " + op})


if __name__ == "__main__":
    sys.exit(main())
