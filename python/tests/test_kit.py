"""Unit tests of the attncheck kit: framing, the serve loop's answers (results,
refusals, errors), dtype conversion, the descriptor's visibility and pages, and
the capability table's checks. Run: python3 -m unittest discover -s python/tests"""

import io
import os
import random
import sys
import unittest

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import attncheck  # noqa: E402
from attncheck.wire import FramingError, encode_message, read_message  # noqa: E402


def request(op, tensors=(), **header):
    return encode_message(dict(header, op=op), tensors)


def attention_request(b=1, hq=2, hkv=1, tq=3, tk=4, d=4, dv=5, convention="bool-visible", mask=None, dtype="f32",
                      seed=0, qkv=None, **extra):
    rng = np.random.default_rng(seed)
    normal = lambda *shape: rng.standard_normal(shape).astype(np.float32) if qkv is None else qkv  # noqa: E731
    tensors = [("q", normal(b, hq, tq, d)), ("k", normal(b, hkv, tk, d)), ("v", normal(b, hkv, tk, dv)),
               ("query_positions", np.tile(np.arange(tq, dtype=np.int32), (b, 1))),
               ("key_positions", np.tile(np.arange(tk, dtype=np.int32), (b, 1)))]
    if mask is not None:
        tensors.append(("mask", mask))
    header = dict(batch=b, q_heads=hq, kv_heads=hkv, tq=tq, tk=tk, head_dim=d, value_dim=dv, dtype=dtype,
                  mask_convention=convention, apply_positional=False, apply_bias=False, scale=0.5, softcap=0.0,
                  current_length=tk, encoding={"kind": "none"}, weights_seed=1)
    header.update(extra)
    return request("attention", tensors, **header), dict(tensors)


def run_serve(requests, attention, **kwargs):
    """Feed the encoded requests to serve(); (exit status, [(header, tensors)] answers)."""
    stdout = io.BytesIO()
    status = attncheck.serve(attention, stdin=io.BytesIO(b"".join(requests)), stdout=stdout, **kwargs)
    stdout.seek(0)
    answers = []
    while True:
        message = read_message(stdout)
        if message is None:
            return status, answers
        answers.append(message)


def ones_attention(call):
    return np.ones((call.batch, call.q_heads, call.tq, call.value_dim), np.float32)


class Framing(unittest.TestCase):
    def test_round_trip(self):
        tensors = [("a", np.arange(6, dtype=np.float32).reshape(2, 3)), ("b", np.array([[-1, 7]], np.int32)),
                   ("c", np.zeros((0, 4), np.uint8)), ("d", np.array([1, 0, 1], np.uint8))]
        header, got = read_message(io.BytesIO(encode_message({"op": "x", "n": [1, 2]}, tensors)))
        self.assertEqual(header, {"op": "x", "n": [1, 2]})
        self.assertEqual(list(got), ["a", "b", "c", "d"])
        for name, array in tensors:
            self.assertEqual(got[name].dtype, array.dtype)
            np.testing.assert_array_equal(got[name], array)

    def test_little_endian_prefix_and_end_of_input(self):
        data = encode_message({"op": "y"})
        self.assertEqual(int.from_bytes(data[:4], "little"), len(data) - 4)
        stream = io.BytesIO(data)
        self.assertEqual(read_message(stream), ({"op": "y"}, {}))
        self.assertIsNone(read_message(stream))

    def test_broken_streams(self):
        data = encode_message({"op": "z"}, [("t", np.ones(4, np.float32))])
        for broken in (data[:-1], data[:2], b"\0\0\0\0", (2 << 20).to_bytes(4, "little")):
            with self.assertRaises(FramingError):
                read_message(io.BytesIO(broken))

    def test_float64_answer_is_refused_by_the_encoder(self):
        with self.assertRaises(TypeError):
            encode_message({"op": "r"}, [("out", np.ones(2, np.float64))])


class Serve(unittest.TestCase):
    def test_hello_declares_protocol_2_and_stages(self):
        status, answers = run_serve([request("hello", protocol=2)], ones_attention, name="k",
                                    capabilities=attncheck.capabilities(nan_isolation=False),
                                    versions={"lib": 1}, rope=lambda call: call.x)
        self.assertEqual(status, 0)
        hello = answers[0][0]
        self.assertEqual((hello["op"], hello["protocol"], hello["name"]), ("hello", 2, "k"))
        self.assertEqual(hello["capabilities"], {"nan_isolation": False, "has_rope_stage": True,
                                                 "has_session": False, "has_backward": False})
        self.assertEqual(hello["versions"], {"lib": "1"})

    def test_attention_sees_the_call_and_answers_float32(self):
        mask = np.array([[[1, 0, 1, 1], [0, 0, 0, 0], [1, 1, 1, 1]]], np.uint8)
        message, sent = attention_request(mask=mask)
        seen = {}

        def attention(call):
            seen["call"] = call
            blocked, bias = attncheck.additive_blocked(call)
            return attncheck.reference_attention(call.q, call.k, call.v, blocked, bias, call.scale, call.softcap)

        status, answers = run_serve([message, request("shutdown"), message], attention)
        self.assertEqual((status, len(answers)), (0, 1))  # nothing answered after shutdown
        header, out = answers[0]
        self.assertEqual(header, {"op": "result"})
        call = seen["call"]
        self.assertEqual(call.mask.dtype, bool)
        np.testing.assert_array_equal(call.mask, mask == 1)
        self.assertEqual((call.batch, call.q_heads, call.kv_heads, call.tq, call.tk, call.dtype),
                         (1, 2, 1, 3, 4, "f32"))
        with self.assertRaises(AttributeError):
            call.tq = 9
        self.assertEqual(out["out"].shape, (1, 2, 3, 5))
        np.testing.assert_array_equal(out["out"][0, :, 1], 0)  # the row with no visible key answers 0
        # query 0 sees keys 0, 2, 3: the softmax of their scores weighs v
        s = 0.5 * sent["q"][0, 0, 0] @ sent["k"][0, 0].T
        p = np.exp(s - s[[0, 2, 3]].max()) * (mask[0, 0] == 1)
        np.testing.assert_allclose(out["out"][0, 0, 0], (p / p.sum()) @ sent["v"][0, 0], rtol=1e-5)

    def test_refusal_and_errors_are_answers(self):
        message, _ = attention_request(mask=np.ones((1, 3, 4), np.uint8))
        outcomes = {
            "refused": lambda call: (_ for _ in ()).throw(attncheck.Refuse("no path for Tq=3")),
            "raised": lambda call: 1 / 0,
            "shape": lambda call: np.zeros((1, 2, 3, 4), np.float32),
            "dtype": lambda call: np.zeros((1, 2, 3, 5), np.int32),
        }
        answers = {k: run_serve([message, message], fn)[1] for k, fn in outcomes.items()}
        self.assertEqual(answers["refused"][0][0], {"op": "error", "kind": "refused", "message": "no path for Tq=3"})
        self.assertEqual(answers["raised"][0][0], {"op": "error", "message": "ZeroDivisionError: division by zero"})
        self.assertEqual(answers["shape"][0][0]["message"],
                         "ValueError: out has shape [1, 2, 3, 4], expected [B, Hq, Tq, Dv] = [1, 2, 3, 5]")
        self.assertIn("dtype int32", answers["dtype"][0][0]["message"])
        for got in answers.values():  # the backend stays up: the second request is answered too
            self.assertEqual(len(got), 2)

    def test_a_compiler_log_in_an_error_is_cut_to_its_first_lines(self):
        message, _ = attention_request(mask=np.ones((1, 3, 4), np.uint8))
        log = "C++ compile error\n" + "noise line\n" * 20000 + "/tmp/x.cpp:7:3: error: 'cur_kvSplitSize7' was not declared\n"

        def compiler(call):
            raise RuntimeError(log)
        answer = run_serve([message], compiler)[1][0][0]["message"]
        self.assertTrue(answer.startswith("RuntimeError: C++ compile error | /tmp/x.cpp:7:3: error: 'cur_kvSplitSize7'"),
                        answer)
        self.assertIn(f"({len(log)} characters in all", answer)
        self.assertLess(len(answer), 800)

    def test_unknown_op_and_missing_stages(self):
        _, answers = run_serve([request("frobnicate"), request("rope"), request("session_open", session=1)],
                               ones_attention)
        self.assertEqual([a[0]["op"] for a in answers], ["error"] * 3)
        self.assertIn("unknown op 'frobnicate'", answers[0][0]["message"])

    def test_declared_stage_without_function_is_a_usage_error(self):
        for key in ("has_session", "has_backward"):
            stderr, sys.stderr = sys.stderr, io.StringIO()
            try:
                status, _ = run_serve([], ones_attention, capabilities={key: True})
                said = sys.stderr.getvalue()
            finally:
                sys.stderr = stderr
            self.assertEqual(status, 2)
            self.assertIn(f"{key} is true", said)

    def test_kv_cache_session_declares_its_rope_as_the_calls(self):
        from attncheck.library import kv_cache_session
        session = kv_cache_session(lambda q, k, v, call, positions: q, np.concatenate)

        class OwnCache:
            def __init__(self, spec):
                pass

        for given, cls, declared in (({}, session, True), ({"session_rope_as_call": False}, session, False),
                                     ({}, OwnCache, None)):
            status, answers = run_serve([request("hello", protocol=2)], ones_attention, capabilities=given,
                                        session=cls)
            self.assertEqual(status, 0)
            self.assertEqual(answers[0][0]["capabilities"].get("session_rope_as_call"), declared, cls.__name__)

    def test_backward_answers_the_three_gradients(self):
        message, sent = attention_request(mask=np.ones((1, 3, 4), np.uint8))
        header, tensors = read_message(io.BytesIO(message))
        dout = np.arange(1 * 2 * 3 * 5, dtype=np.float32).reshape(1, 2, 3, 5)
        backward_request = request("backward", list(tensors.items()) + [("dout", dout)],
                                   **{k: v for k, v in header.items() if k != "op"})
        seen = {}

        def backward(call, d_out):
            seen["dout"] = d_out
            return call.q * 2, call.k * 3, call.v * 4

        status, answers = run_serve([backward_request], ones_attention, backward=backward)
        self.assertEqual(status, 0)
        answer, grads = answers[0]
        self.assertEqual(answer, {"op": "result"})
        np.testing.assert_array_equal(seen["dout"], dout)
        for name, source, factor in (("dq", "q", 2), ("dk", "k", 3), ("dv", "v", 4)):
            np.testing.assert_array_equal(grads[name], sent[source] * factor)
        # a gradient of the wrong shape is an error answer, not a crash
        status, answers = run_serve([backward_request], ones_attention,
                                    backward=lambda call, d_out: (call.q, call.q, call.v))
        self.assertEqual(answers[0][0]["op"], "error")
        self.assertIn("dk", answers[0][0]["message"])

    def test_backward_saved_hands_out_and_lse(self):
        message, sent = attention_request(mask=np.ones((1, 3, 4), np.uint8))
        header, tensors = read_message(io.BytesIO(message))
        dout = np.arange(1 * 2 * 3 * 5, dtype=np.float32).reshape(1, 2, 3, 5)
        out = dout * 0.5
        lse = np.array([[[0.5, 1.0, np.inf], [2.0, -1.0, 3.0]]], np.float32)
        backward_request = request("backward", list(tensors.items()) + [("dout", dout), ("out", out), ("lse", lse)],
                                   **{k: v for k, v in header.items() if k != "op"})
        seen = {}

        def backward(call, d_out, out=None, lse=None):
            seen["out"], seen["lse"] = out, lse
            return call.q, call.k, call.v

        status, answers = run_serve([backward_request], ones_attention, backward=backward,
                                    capabilities=attncheck.capabilities(has_backward=True, backward_saved=True))
        self.assertEqual(answers[0][0], {"op": "result"})
        np.testing.assert_array_equal(seen["out"], out)
        np.testing.assert_array_equal(seen["lse"], lse)
        # without the declaration the function is called as before, (call, dout)
        run_serve([backward_request], ones_attention, backward=backward)
        self.assertIsNone(seen["out"])

    def test_misspelt_key_in_a_hand_written_dict_is_a_usage_error(self):
        stderr, sys.stderr = sys.stderr, io.StringIO()
        try:
            status, answers = run_serve([request("hello", protocol=2)], ones_attention,
                                        capabilities={"masked_rows": "nan", "nan_isolaton": False})
            said = sys.stderr.getvalue()
        finally:
            sys.stderr = stderr
        self.assertEqual((status, answers), (2, []))
        self.assertIn("unknown capability 'nan_isolaton'; did you mean 'nan_isolation'?", said)

    def test_sessions_and_rope(self):
        rng = np.random.default_rng(3)
        log = []

        class Session:
            def __init__(self, spec):
                self.spec, self.k, self.v = spec, [], []
                log.append(("open", spec.batch, spec.value_dim))

            def append(self, k, v, positions):
                self.k.append(k)
                self.v.append(v)

            def attend(self, call):
                log.append(("attend", call.tq, call.tk, call.mask_convention, call.key_positions.tolist()))
                k, v = np.concatenate(self.k, axis=2), np.concatenate(self.v, axis=2)
                blocked, bias = attncheck.additive_blocked(call)
                return attncheck.reference_attention(call.q, k, v, blocked, bias, self.spec.scale, self.spec.softcap)

            def close(self):
                log.append(("close",))

        spec = dict(batch=1, q_heads=1, kv_heads=1, head_dim=2, value_dim=3, dtype="f32", scale=1.0, softcap=0.0,
                    apply_positional=False, apply_bias=False, current_length=2, encoding={"kind": "none"},
                    weights_seed=0)
        v = rng.standard_normal((1, 1, 2, 3)).astype(np.float32)
        rope = {"layout": "interleaved", "rotary_dim": 2, "theta": [0.5], "mscale": 1.0, "log_n": False}
        x = np.array([[[[1.0, 0.0]]]], np.float32)
        requests = [
            request("session_open", session=7, **spec),
            request("session_append", [("k", np.zeros((1, 1, 2, 2), np.float32)), ("v", v),
                                       ("positions", np.array([[0, 1]], np.int32))], session=7, n=2),
            request("session_attend", [("q", np.ones((1, 1, 1, 2), np.float32)),
                                       ("positions", np.array([[1]], np.int32))],
                    session=7, tq=1, tk=2, mask_convention="causal-bottom-right"),
            request("session_close", session=7),
            request("rope", [("x", x), ("positions", np.array([[2]], np.int32))], batch=1, heads=1, tokens=1,
                    head_dim=2, current_length=3, dtype="f32", softcap=0.0, encoding={"kind": "rope"},
                    weights_seed=0, rope=rope),
        ]
        rope_fn = lambda call: attncheck.rotate(call.x, call.positions, call.rope)  # noqa: E731
        status, answers = run_serve(requests, ones_attention, session=Session, rope=rope_fn)
        self.assertEqual([a[0]["op"] for a in answers], ["ok", "ok", "result", "ok", "result"])
        np.testing.assert_allclose(answers[2][1]["out"][0, 0, 0], v[0, 0].mean(axis=0), rtol=1e-6)  # equal scores
        np.testing.assert_allclose(answers[4][1]["out"].ravel(), [np.cos(1.0), np.sin(1.0)], rtol=1e-6)
        self.assertEqual(log, [("open", 1, 3), ("attend", 1, 2, "causal-bottom-right", [[0, 1]]), ("close",)])


class ProtocolStdout(unittest.TestCase):
    def test_what_the_kernel_prints_goes_to_stderr(self):
        """serve() on the real stdout keeps fd 1 for the protocol: print() in the kernel
        (and C code writing to fd 1) reaches stderr, and the answers stay framed."""
        import subprocess
        code = ("import sys; sys.path.insert(0, sys.argv[1]); import numpy as np, attncheck\n"
                "def attention(call):\n"
                "    print('kernel says hi', flush=True)\n"
                "    return np.ones((call.batch, call.q_heads, call.tq, call.value_dim), np.float32)\n"
                "sys.exit(attncheck.serve(attention))\n")
        hello = request("hello", protocol=2)
        message, _ = attention_request()
        done = subprocess.run([sys.executable, "-c", code, os.path.join(os.path.dirname(__file__), "..")],
                              input=hello + message + request("shutdown"), capture_output=True, check=True)
        stream = io.BytesIO(done.stdout)
        header, _ = read_message(stream)
        self.assertEqual(header["op"], "hello")
        header, tensors = read_message(stream)
        self.assertEqual(header["op"], "result")
        self.assertEqual(tensors["out"].shape, (1, 2, 3, 5))
        self.assertIsNone(read_message(stream))
        self.assertIn(b"kernel says hi", done.stderr)


class Dtypes(unittest.TestCase):
    def test_bf16_rounds_to_nearest_even(self):
        one = 1.0
        cases = {one: 0x3F80, one + 2 ** -8: 0x3F80, one + 3 * 2 ** -8: 0x3F82, one + 2 ** -8 + 2 ** -20: 0x3F81,
                 -2.0: 0xC000, float("inf"): 0x7F80, 3.4e38: 0x7F80, 1e-45: 0x0000}
        got = attncheck.bf16_bits(np.array(list(cases), np.float32))
        self.assertEqual([hex(int(g)) for g in got], [hex(v) for v in cases.values()])
        nan = attncheck.bf16_bits(np.array([np.nan, -np.nan], np.float32))
        self.assertTrue(np.isnan(attncheck.from_bf16_bits(nan)).all())

    def test_bf16_is_the_nearest_on_random_values(self):
        rng = np.random.default_rng(11)
        x = (rng.standard_normal(20000) * np.exp2(rng.integers(-30, 30, 20000))).astype(np.float32)
        bits = x.view(np.uint32)
        x = np.concatenate([x, (bits & 0xFFFF0000 | 0x8000).view(np.float32)])  # exact ties too
        got = attncheck.from_bf16_bits(attncheck.bf16_bits(x)).astype(np.float64)
        down = (x.view(np.uint32) & 0xFFFF0000).view(np.float32).astype(np.float64)
        up = ((x.view(np.uint32) & 0xFFFF0000) + 0x10000).view(np.float32).astype(np.float64)
        err = np.abs(got - x)
        self.assertTrue((err <= np.minimum(np.abs(down - x), np.abs(up - x))).all())
        tie = np.abs(down - x) == np.abs(up - x)
        self.assertTrue(tie.sum() > 1000)
        self.assertTrue(((attncheck.bf16_bits(x[tie]) & 1) == 0).all())  # ties go to the even mantissa

    def test_native_dtypes_reach_the_kernel_and_come_back(self):
        q = np.array([1.0, 1.5, -2.0, 0.25], np.float32).reshape(1, 1, 1, 4)
        for dtype, expected in (("f16", np.float16), ("bf16", np.uint16), ("f32", np.float32)):
            message, _ = attention_request(dtype=dtype, convention="causal-top-left", tq=1, tk=1, d=4, dv=4, hq=1,
                                           qkv=q)
            seen = {}

            def attention(call):
                seen["q"] = call.q
                return call.q if dtype != "f32" else call.q.astype(np.float64)

            _, answers = run_serve([message], attention, native_dtype=True)
            self.assertEqual(seen["q"].dtype, expected, dtype)
            np.testing.assert_array_equal(answers[0][1]["out"], q)  # exactly representable: the round trip is exact


try:
    import torch
except ImportError:
    torch = None


class Torch(unittest.TestCase):
    def test_numpy_mode_never_imports_torch(self):
        import subprocess
        code = ("import io, sys; sys.path.insert(0, sys.argv[1]); import attncheck; "
                "attncheck.serve(lambda c: None, stdin=io.BytesIO(), stdout=io.BytesIO()); "
                "attncheck.capabilities(dtypes=['bf16']); print('torch' in sys.modules)")
        out = subprocess.run([sys.executable, "-c", code, os.path.join(os.path.dirname(__file__), "..")],
                             capture_output=True, text=True, check=True).stdout
        self.assertEqual(out.strip(), "False")

    @unittest.skipIf(torch is None, f"torch is not installed for {sys.executable}")
    def test_torch_tensors_in_and_out(self):
        q = np.array([1.0, 1.5, -2.0, 0.25], np.float32).reshape(1, 1, 1, 4)
        for native, dtype, expected in ((False, "bf16", torch.float32), (True, "bf16", torch.bfloat16),
                                        (True, "f16", torch.float16)):
            message, _ = attention_request(dtype=dtype, convention="bool-blocked", tq=1, tk=1, d=4, dv=4, hq=1,
                                           qkv=q, mask=np.zeros((1, 1, 1), np.uint8))
            seen = {}

            def attention(call):
                seen["q"], seen["mask"] = call.q, call.mask
                return call.v * 2  # a torch tensor of the case dtype

            _, answers = run_serve([message], attention, tensors="torch", native_dtype=native)
            self.assertEqual(seen["q"].dtype, expected)
            self.assertEqual(seen["mask"].dtype, torch.bool)
            np.testing.assert_array_equal(answers[0][1]["out"], 2 * q)

    @unittest.skipIf(torch is None, f"torch is not installed for {sys.executable}")
    def test_unpage_keeps_torch(self):
        d = attncheck.Descriptor({"num_sequences": 1, "page_size": 2, "max_blocks": 1, "num_pages": 2,
                                  "block_table": [1]})
        pages = torch.arange(8, dtype=torch.float16).reshape(2, 1, 2, 2)
        out = d.unpage(pages, 1, 2)
        self.assertEqual(out.dtype, torch.float16)
        self.assertEqual(out.tolist(), [[[[4.0, 5.0], [6.0, 7.0]]]])


def flash_visible(d, b, i, j, tq, tk):
    """One element of FlashAttention's rule, written out as scalars (the oracle)."""
    if d.get("cu_seqlens_q") is not None:
        cq, ck = d["cu_seqlens_q"], d["cu_seqlens_k"]
        for s in range(d["num_sequences"]):
            if cq[s] <= i < cq[s + 1] and ck[s] <= j < ck[s + 1]:
                prefix = d["prefix_len"][s] if "prefix_len" in d else 0
                return inside(d, i - cq[s], j - ck[s], cq[s + 1] - cq[s], ck[s + 1] - ck[s], prefix)
        return False
    nq = d["seqused_q"][b] if "seqused_q" in d else tq
    pad = d["leftpad_k"][b] if "leftpad_k" in d else 0
    nk = (d["seqused_k"][b] if "seqused_k" in d else tk) - pad
    prefix = d["prefix_len"][b] if "prefix_len" in d else 0
    return i < nq and 0 <= j - pad < nk and inside(d, i, j - pad, nq, nk, prefix)


def inside(d, i, j, nq, nk, prefix):
    diagonal = i if d["causal"] == 1 else i + nk - nq
    ok = d["causal"] == 0 or j <= diagonal
    ok = ok and (d["window_left"] < 0 or j >= diagonal - d["window_left"])
    ok = ok and (d["window_right"] < 0 or j <= diagonal + d["window_right"])
    ok = ok and (d["chunk"] == 0 or j // d["chunk"] == diagonal // d["chunk"])
    return ok or (0 <= diagonal < prefix and j < prefix)


def random_descriptor(rng, varlen):
    d = {"causal": rng.choice([0, 1, 2]), "window_left": rng.choice([-1, -1, 0, 1, 3]),
         "window_right": rng.choice([-1, -1, 0, 2]), "chunk": rng.choice([0, 0, 2, 3]), "alibi_max_bias": 0,
         "softcap": 0}
    n = rng.randint(1, 3)
    d["num_sequences"] = n
    if varlen:
        lq, lk = [rng.randint(0, 5) for _ in range(n)], [rng.randint(0, 6) for _ in range(n)]
        d["cu_seqlens_q"] = [sum(lq[:s]) for s in range(n + 1)]
        d["cu_seqlens_k"] = [sum(lk[:s]) for s in range(n + 1)]
        shape = (1, max(1, sum(lq)), max(1, sum(lk)))
    else:
        shape = (n, rng.randint(1, 6), rng.randint(1, 7))
        if rng.random() < 0.5:
            d["seqused_q"] = [rng.randint(0, shape[1]) for _ in range(n)]
        if rng.random() < 0.5:
            d["seqused_k"] = [rng.randint(0, shape[2]) for _ in range(n)]
            if rng.random() < 0.5:
                d["leftpad_k"] = [rng.randint(0, used) for used in d["seqused_k"]]
    if rng.random() < 0.3:
        d["prefix_len"] = [rng.randint(0, 4) for _ in range(n)]
    return d, shape


class Descriptors(unittest.TestCase):
    def test_blocked_is_flash_attentions_rule(self):
        rng = random.Random(5)
        for trial in range(600):
            d, (b, tq, tk) = random_descriptor(rng, varlen=trial % 3 == 0)
            got = attncheck.Descriptor.from_json(d).blocked(b, tq, tk)
            want = np.array([[[not flash_visible(d, x, i, j, tq, tk) for j in range(tk)] for i in range(tq)]
                             for x in range(b)])
            np.testing.assert_array_equal(got, want, err_msg=str(d))

    def test_unpage_reads_through_the_block_table(self):
        rng = np.random.default_rng(9)
        batch, heads, tk, dim, size = 2, 2, 7, 3, 2
        used = [7, 4]
        blocks = 4
        logical = rng.standard_normal((batch, heads, tk, dim)).astype(np.float32)
        order = rng.permutation(9)
        table = order[:batch * blocks].reshape(batch, blocks)
        pages = np.full((9, heads, size, dim), np.nan, np.float32)
        for s in range(batch):
            for j in range(used[s]):
                pages[table[s, j // size], :, j % size] = logical[s, :, j]
        d = attncheck.Descriptor({"causal": 0, "window_left": -1, "window_right": -1, "num_sequences": 2, "chunk": 0,
                                  "seqused_k": used, "page_size": size, "max_blocks": blocks, "num_pages": 9,
                                  "block_table": table.ravel().tolist()})
        self.assertTrue(d.paged and not d.varlen)
        out = d.unpage(pages, batch, tk)
        np.testing.assert_array_equal(out[0], logical[0])
        np.testing.assert_array_equal(out[1, :, :4], logical[1, :, :4])
        self.assertTrue(np.isnan(out[1, :, 4:]).all())
        with self.assertRaises(ValueError):
            d.unpage(pages[:8], batch, tk)


class Capabilities(unittest.TestCase):
    def test_unknown_key_names_the_closest(self):
        with self.assertRaisesRegex(TypeError, r"unknown capability 'nan_isolaton'; did you mean 'nan_isolation'\?"):
            attncheck.capabilities(nan_isolaton=False)
        with self.assertRaisesRegex(TypeError, r"'accuracy.pv_acum'; did you mean 'accuracy.pv_accum'\?"):
            attncheck.capabilities(accuracy={"pv_acum": "f16"})
        with self.assertRaisesRegex(TypeError, r"did you mean 'nan'\?"):
            attncheck.capabilities(masked_rows="nans")

    def test_wrong_types(self):
        for bad in ({"nan_isolation": "false"}, {"max_tokens": True}, {"max_tokens": 0}, {"dtypes": "f32"},
                    {"dtypes": []}, {"masks": ["bool"]}, {"head_dims": [0]}, {"size_tier": 5}):
            with self.assertRaises(TypeError, msg=str(bad)):
                attncheck.capabilities(**bad)

    def test_every_key_takes_its_default(self):
        self.assertEqual(attncheck.capabilities(**attncheck.defaults()), attncheck.defaults())
        self.assertEqual(len({k.name for k in attncheck.KEYS}), len(attncheck.KEYS))
        for key in attncheck.KEYS:
            self.assertTrue(key.meaning, key.name)


if __name__ == "__main__":
    unittest.main()
