#!/usr/bin/env python3
"""The capability keys agree in the three places that name them: the harness's
parser (CapabilitiesFromJson and the nested readers in
adapters/process/process_adapter.cc, and what `attncheck list --json` shows for an
exec: backend), the Python kit's table (python/attncheck/keys.py: KEYS) and the
table in adapters/process/PROTOCOL.md. Defaults agree too: a backend declaring
nothing lists exactly the kit's defaults, and one declaring every key away from its
default lists exactly what it sent.

Usage: python_kit_keys.py ATTNCHECK_BINARY SOURCE_DIR   (exit 77: numpy missing)"""

import json
import os
import re
import subprocess
import sys
import tempfile

BINARY, SOURCE = sys.argv[1], sys.argv[2]
try:
    import numpy  # noqa: F401
except ImportError:
    print(f"SKIP: numpy is not installed for {sys.executable} (the kit needs it)")
    sys.exit(77)
sys.path.insert(0, os.path.join(SOURCE, "python"))
import attncheck  # noqa: E402
from attncheck.keys import KEYS, markdown_table  # noqa: E402

problems = []


def flat(table, prefix=""):
    """{"key" or "object.field": Key}"""
    out = {}
    for key in table:
        out[prefix + key.name] = key
        if key.fields:
            out.update(flat(key.fields, f"{key.name}."))
    return out


def body(source, function):
    """The text of a C++ function's body (from its signature to the closing brace at column 0)."""
    match = re.search(rf"\n\S[^\n]*\b{function}\(const nlohmann::json& j\) \{{\n(.*?)\n\}}\n", source, re.S)
    if not match:
        problems.append(f"process_adapter.cc: no function {function}(const nlohmann::json& j)")
        return ""
    return match.group(1)


def parsed_keys():
    """Every key the harness's parser reads, as "key" or "object.field"."""
    with open(os.path.join(SOURCE, "adapters/process/process_adapter.cc")) as f:
        source = f.read()
    read = r'(?:Read\w*\(j, |contains\(|dtype\(|flag\()"(\w+)"'
    keys = set(re.findall(read, body(source, "CapabilitiesFromJson")))
    for obj, function in (("size_tier", "SizeTierFromJson"), ("accuracy", "AccuracyFromJson")):
        keys |= {f"{obj}.{k}" for k in re.findall(read, body(source, function))}
    return keys


def protocol_table():
    with open(os.path.join(SOURCE, "adapters/process/PROTOCOL.md")) as f:
        text = f.read()
    match = re.search(r"<!-- capability-keys:begin[^>]*-->\n(.*?)<!-- capability-keys:end -->", text, re.S)
    if not match:
        problems.append("PROTOCOL.md: no table between <!-- capability-keys:begin --> and <!-- capability-keys:end -->")
        return "", set()
    names = set(re.findall(r"^\| `([\w.]+)` \|", match.group(1), re.M))
    return match.group(1), names


def listed(capabilities):
    """The capabilities `attncheck list --adapter exec:... --json` holds for a kit backend declaring these."""
    with tempfile.TemporaryDirectory() as tmp:
        caps_file = os.path.join(tmp, "caps.json")
        with open(caps_file, "w") as f:
            json.dump(capabilities, f)
        backend = os.path.join(tmp, "backend.py")
        with open(backend, "w") as f:
            f.write(f"import json, sys\nsys.path.insert(0, {os.path.join(SOURCE, 'python')!r})\nimport attncheck\n"
                    f"caps = json.load(open({caps_file!r}))\n"
                    "stage = lambda call: None\n"
                    "sys.exit(attncheck.serve(stage, capabilities=caps, rope=stage if caps.get('has_rope_stage') else "
                    "None, session=object if caps.get('has_session') else None, backward=stage if caps.get('has_backward') else None))\n")
        run = subprocess.run([BINARY, "list", "--adapter", f"exec:{sys.executable} {backend}", "--json"],
                             capture_output=True, text=True, timeout=120)
        if run.returncode != 0:
            problems.append(f"list --json exited {run.returncode}: {run.stderr.strip()}")
            return {}
        return json.loads(run.stdout)["capabilities"]


def away_from_default(key):
    """A valid value of key other than its default."""
    if key.type == "bool":
        return not key.default
    if key.type == "int":
        return key.default + 1 if key.default < key.high else key.default - 1
    if key.type == "name":
        return next(c for c in key.choices if c != key.default)
    if key.type == "names":
        return [c for c in key.choices if c not in key.default][:2] or key.default[:1]
    if key.type == "ints":
        return [8, 16]
    return {f.name: away_from_default(f) for f in key.fields}


kit = flat(KEYS)
parser = parsed_keys()
table_text, documented = protocol_table()
defaults = attncheck.defaults()
shown = listed({})
shown_keys = set(flat_keys for k, v in shown.items()
                 for flat_keys in ([k] + [f"{k}.{f}" for f in v] if isinstance(v, dict) else [k]))
for where, names in (("CapabilitiesFromJson (process_adapter.cc)", parser), ("attncheck list --json", shown_keys),
                     ("PROTOCOL.md's table", documented)):
    for name in sorted(names - set(kit)):
        problems.append(f"{where} has key '{name}', the kit's KEYS does not")
    for name in sorted(set(kit) - names):
        problems.append(f"the kit's KEYS has key '{name}', {where} does not")
if table_text and table_text != markdown_table():
    problems.append("PROTOCOL.md's table differs from the kit's KEYS rendered (python3 -c 'import attncheck.keys as k; "
                    "print(k.markdown_table())' in python/ renders it)")
if shown and shown != defaults:
    for name in sorted(set(shown) | set(defaults)):
        if shown.get(name) != defaults.get(name):
            problems.append(f"default of '{name}': the harness holds {json.dumps(shown.get(name))}, the kit says "
                            f"{json.dumps(defaults.get(name))}")
sent = {key.name: away_from_default(key) for key in KEYS}
back = listed(attncheck.capabilities(**sent))
for name in sorted(sent):
    if back and back.get(name) != sent[name]:
        problems.append(f"'{name}': sent {json.dumps(sent[name])}, the harness holds {json.dumps(back.get(name))}")

# Every name the kit offers for a key is one the harness takes (each name key cycles
# through its choices; each list key sends all of them at once).
name_keys = [k for k in KEYS if k.type in ("name", "names")]
rounds = max(len(k.choices) for k in name_keys if k.type == "name")
for i in range(rounds):
    sent = {k.name: k.choices[i % len(k.choices)] if k.type == "name" else list(k.choices) for k in name_keys}
    sent["accuracy"] = dict(attncheck.defaults()["accuracy"],
                            **{f.name: f.choices[i % len(f.choices)] for f in flat(KEYS)["accuracy"].fields if f.choices})
    back = listed(sent)
    for name in sorted(sent):
        if back and back.get(name) != sent[name]:
            problems.append(f"'{name}': sent {json.dumps(sent[name])}, the harness holds {json.dumps(back.get(name))}")
# And every name the harness's contract enums have is one the kit offers (cases/capabilities.cc).
with open(os.path.join(SOURCE, "cases/capabilities.cc")) as f:
    enums = f.read()
for key, enum in (("masked_rows", "MaskedRowPolicy"), ("blocking", "Blocking")):
    match = re.search(rf"std::string_view Name\({enum} \w+\) \{{(.*?)\n\}}", enums, re.S)
    names = set(re.findall(r'return "([\w-]+)";', match.group(1))) if match else set()
    if not names:
        problems.append(f"cases/capabilities.cc: no Name({enum}) with its names")
    for name in sorted(names - set(flat(KEYS)[key].choices)):
        problems.append(f"the harness's {enum} has '{name}', the kit's '{key}' choices do not")

for p in problems:
    print("MISMATCH:", p)
print(f"{len(kit)} keys in the kit's table; parser reads {len(parser)}, list --json shows {len(shown_keys)}, "
      f"PROTOCOL.md lists {len(documented)}; {len(problems)} mismatches")
sys.exit(1 if problems else 0)
