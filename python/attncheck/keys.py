"""The capability and contract keys of a backend's hello, as ONE table (KEYS).

Every key the harness parses (CapabilitiesFromJson in
adapters/process/process_adapter.cc) is a row here and a row of the table in
adapters/process/PROTOCOL.md; tests/python_kit_keys.py checks that the three agree.
"""

import difflib

DTYPES = ("f32", "f16", "bf16")
MASKS = ("add-inf", "add-lowest", "add-1e4", "add-1e9", "bool-visible", "bool-blocked", "causal-top-left",
         "causal-bottom-right", "descriptor")
ENCODINGS = ("none", "sinusoidal", "learned", "rope", "alibi", "t5", "kerple", "xpos", "sandwich")
ROPE_LAYOUTS = ("half-split", "interleaved")
ROPE_SCALINGS = ("none", "linear", "ntk-aware", "dynamic-ntk", "yarn", "yarn-paper", "llama3", "ntk-mixed")
DESCRIPTOR_FORMS = ("causal_top_left", "causal_bottom_right", "window", "varlen", "seqused_q", "seqused_k", "leftpad_k",
                    "prefix", "chunk", "paged", "alibi", "alibi_max_bias", "softcap",
                    "varlen_backward")
MASKED_ROWS = ("zeros", "nan", "unspecified", "mean-v")
BLOCKING = ("fill", "neg-inf", "fill-rows")


class Key:
    """One row: name, type ("bool", "int", "name", "names", "ints", "object"), default
    (the C++ default), meaning; `choices` for names, `low`/`high` for ints, `fields`
    (a table of its own) for objects; `contract` marks a promise rather than a feature."""

    __slots__ = ("name", "type", "default", "meaning", "choices", "low", "high", "fields", "contract")

    def __init__(self, name, type, default, meaning, choices=None, low=None, high=None, fields=None, contract=False):
        self.name, self.type, self.default, self.meaning = name, type, default, meaning
        self.choices, self.low, self.high, self.fields, self.contract = choices, low, high, fields, contract

    def __repr__(self):
        return f"Key({self.name!r}, {self.type!r}, default={self.default!r})"


SIZE_TIER = (
    Key("percent", "int", 0, "share of drawn cases in the tier (0 = no tier)", low=0, high=100),
    Key("max_tokens", "int", 512, "Tk drawn in [256, max_tokens]", low=1, high=1 << 16),
    Key("max_query_len", "int", 256, "Tq drawn in [64, max_query_len]", low=1, high=1 << 16),
    Key("max_head_dim", "int", 128, "D from {64, 128}, up to this", low=2, high=4096),
    Key("max_heads", "int", 4, "query heads in [2, max_heads]", low=1, high=256),
    Key("max_batch", "int", 1, "batch rows", low=1, high=64),
)

ACCURACY = (
    Key("score_accum", "name", "f32", "the dtype the q·k sums accumulate in", choices=DTYPES),
    Key("pv_accum", "name", "f32", "the dtype the P·V sums accumulate in", choices=DTYPES),
    Key("scores_in_input_dtype", "bool", False, "the scores S are stored in the input dtype between steps"),
    Key("p_in_input_dtype", "bool", False, "the probabilities P are stored in the input dtype between steps"),
)

KEYS = (
    Key("owns_rope", "bool", False, "applies RoPE / xPos / absolute encodings itself (else q/k arrive encoded)"),
    Key("owns_bias", "bool", False, "applies ALiBi / T5 / KERPLE / Sandwich score biases itself (else folded into "
        "an additive mask)"),
    Key("has_rope_stage", "bool", False, "answers `rope` requests (rotation alone)"),
    Key("has_session", "bool", False, "answers `session_*` requests (cached decode)"),
    Key("session_rope_as_call", "bool", False, "contract: its session rotates each token as one `attention` call "
        "at the same position does, with the same float angles (the kit's `kv_cache_session` declares it); "
        "decode-consistency then leaves the kernel's RoPE angle error out of the session-vs-prefill comparison",
        contract=True),
    Key("has_backward", "bool", False, "answers `backward` requests (dq, dk, dv; the backward-* laws)"),
    Key("backward_lse", "bool", False, "its `backward` answer also carries `lse` f32 [B, Hq, Tq], the forward's "
        "log-sum-exp (backward-agreement checks it)"),
    Key("backward_saved", "bool", False, "its `backward` request also carries the forward's saved `out` (case "
        "dtype, [B, Hq, Tq, Dv]) and `lse` (f32 [B, Hq, Tq]; +inf on a row with no visible key) as inputs"),
    Key("backward_deterministic", "bool", True, "contract: its `backward` called twice on the same inputs answers "
        "the same bits (false: it sums dq, dk or dv in a run-dependent order, as atomic adds across tiles do; the "
        "backward laws that compare two runs then allow that order's rounding)", contract=True),
    Key("dtypes", "names", ["f32"], "the case dtypes it takes", choices=DTYPES),
    Key("masks", "names", ["add-inf"], "the mask conventions it takes, the first preferred", choices=MASKS),
    Key("descriptor_forms", "names", [], "the visibility-descriptor forms a `descriptor` kernel takes "
        "(`varlen_backward`: with `varlen` and a backward, the backward call takes the varlen layout too; else it "
        "is asked for padded cases only)", choices=DESCRIPTOR_FORMS),
    Key("page_size", "int", 0, "the page size of the `paged` descriptor form (0: not paged)", low=0, high=1 << 16),
    Key("more_page_sizes", "ints", [], "further page sizes the `paged` form takes: each case is drawn at one of "
        "`page_size` and these, so every size is gated", low=1, high=1 << 16),
    Key("masked_rows", "name", "zeros", "contract: what a query row with no visible key returns (`nan` or "
        "`unspecified`: a NaN there is allowed)", choices=MASKED_ROWS, contract=True),
    Key("pad_query_rows", "name", "as-masked-rows", "contract: what a padded batch's query row past `seqused_q` "
        "returns where it differs from `masked_rows` (jax.nn.dot_product_attention: `mean-v` for a row with no "
        "visible key, `zeros` past `query_seq_lengths`)", choices=("as-masked-rows",) + MASKED_ROWS, contract=True),
    Key("blocking", "name", "fill", "contract: which additive-mask values block a key (`fill`: the convention's "
        "fill and below; `neg-inf`: only -inf, a finite fill is a very negative score; `fill-rows`: the mask is "
        "added, so a score can outweigh a finite fill, but a row all at the fill has no visible key)", choices=BLOCKING,
        contract=True),
    Key("nan_isolation", "bool", True, "contract: NaN/inf in key/value slots no query may read stays out of every "
        "visible output (false turns a NaN leaking from a poisoned slot into a declared hazard instead of a fail)",
        contract=True),
    Key("encodings", "names", ["none"], "the positional encodings / score biases it takes", choices=ENCODINGS),
    Key("rope_layouts", "names", ["half-split", "interleaved"], "the RoPE pair layouts it takes",
        choices=ROPE_LAYOUTS),
    Key("rope_scalings", "names", ["none"], "the RoPE scalings it takes", choices=ROPE_SCALINGS),
    Key("gqa", "bool", True, "takes fewer kv heads than query heads (grouped-query attention)"),
    Key("softcap", "bool", False, "takes a score softcap (cap·tanh(s/cap))"),
    Key("value_dim_differs", "bool", True, "takes a value dim Dv different from the head dim D"),
    Key("queries_beyond_keys", "bool", False, "contract: takes Tq > Tk (bottom-right causal then leaves the first "
        "Tq - Tk rows with no key: the masked_rows policy)", contract=True),
    Key("scale_argument", "bool", True, "takes a scale argument (false: always 1/sqrt(D))"),
    Key("rope_log_n", "bool", True, "takes RoPE's log-n query scaling"),
    Key("max_batch", "int", 3, "largest batch drawn", low=1, high=64),
    Key("max_heads", "int", 4, "largest query head count drawn", low=1, high=256),
    Key("max_tokens", "int", 40, "largest Tq and Tk drawn", low=1, high=1 << 16),
    Key("max_head_dim", "int", 32, "largest head dim D drawn", low=2, high=4096),
    Key("head_dim_multiple", "int", 1, "D is a multiple of this (0 or 1: any)", low=0, high=4096),
    Key("head_dims", "ints", [], "the head dims D it takes ([]: any up to max_head_dim)", low=1, high=4096),
    Key("max_position", "int", 70000, "largest logical position drawn", low=1, high=1 << 30),
    Key("tile_sizes", "ints", [], "its tile lengths along Tq and Tk (block sizes): a share of cases drawn at "
        "multiples of them and one off", low=1, high=1 << 16),
    Key("size_tier", "object", {k.name: k.default for k in SIZE_TIER}, "a share of cases drawn at the sizes where "
        "kernels switch paths", fields=SIZE_TIER),
    Key("accuracy", "object", {k.name: k.default for k in ACCURACY}, "contract: how it computes, which sets its "
        "tolerance", fields=ACCURACY, contract=True),
)


def _unknown(what, name, known):
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    hint = f"; did you mean '{close[0]}'?" if close else f" (known: {', '.join(known)})"
    return TypeError(f"unknown {what} '{name}'{hint}")


def _check(key, value, where):
    """value checked against key's row; returns it as JSON-ready (lists copied)."""
    t = key.type
    if t == "bool":
        if not isinstance(value, bool):
            raise TypeError(f"{where}: expected True or False, got {value!r}")
        return value
    if t == "int":
        if isinstance(value, bool) or not isinstance(value, int) and not hasattr(value, "__index__"):
            raise TypeError(f"{where}: expected an integer, got {value!r}")
        value = int(value)
        if not key.low <= value <= key.high:
            raise TypeError(f"{where}: expected an integer from {key.low} to {key.high}, got {value}")
        return value
    if t == "name":
        if not isinstance(value, str):
            raise TypeError(f"{where}: expected a name, one of {', '.join(key.choices)}, got {value!r}")
        if value not in key.choices:
            raise _unknown(f"{where} name", value, key.choices)
        return value
    if t in ("names", "ints"):
        if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
            raise TypeError(f"{where}: expected a list, got {value!r}")
        item = Key(key.name, "name" if t == "names" else "int", None, "", key.choices, key.low, key.high)
        out = [_check(item, v, where) for v in value]
        if not out and key.default:  # as the parser: a list may be empty only where its default is
            raise TypeError(f"{where}: expected a non-empty list")
        return out
    if t == "object":
        if not isinstance(value, dict):
            raise TypeError(f"{where}: expected a dict of {', '.join(f.name for f in key.fields)}, got {value!r}")
        return _check_table(key.fields, value, f"{where}.")
    raise AssertionError(t)


def _check_table(table, given, prefix):
    rows = {k.name: k for k in table}
    out = {}
    for name, value in given.items():
        if name not in rows:
            raise _unknown("capability", f"{prefix}{name}", [f"{prefix}{row}" for row in rows])
        out[name] = _check(rows[name], value, f"{prefix}{name}")
    return out


def capabilities(**keys):
    """The hello's capabilities: each keyword a row of KEYS, checked for its type;
    an unknown key is a TypeError naming the closest known one. Keys left out take
    the harness's default (Key.default)."""
    return _check_table(KEYS, keys, "")


def check_capabilities(caps):
    """A capabilities dict (from capabilities() or written by hand) checked the same way."""
    if not isinstance(caps, dict):
        raise TypeError(f"capabilities: expected a dict, got {caps!r}")
    return _check_table(KEYS, caps, "")


def defaults():
    """Every key with the value the harness assumes when the hello leaves it out."""
    return {k.name: k.default for k in KEYS}


def _type_text(key):
    if key.type == "int":
        return f"int {key.low}–{key.high}"
    if key.type == "ints":
        return f"list of int {key.low}–{key.high}"
    if key.type in ("name", "names"):
        return ("name" if key.type == "name" else "list of names") + ": " + ", ".join(f"`{c}`" for c in key.choices)
    return key.type


def _rows(table, prefix=""):
    for key in table:
        yield prefix + key.name, key
        if key.fields:
            yield from _rows(key.fields, f"{key.name}.")


def markdown_table():
    """The table adapters/process/PROTOCOL.md lists, rendered from KEYS (objects' fields as `object.field`)."""
    import json
    lines = ["| key | type | default | meaning |", "|---|---|---|---|"]
    for name, key in _rows(KEYS):
        lines.append(f"| `{name}` | {_type_text(key)} | `{json.dumps(key.default)}` | {key.meaning} |")
    return "\n".join(lines) + "\n"
