#!/usr/bin/env python3
"""The README's "Gate your Python kernel in 5 minutes" kernel, taken verbatim from
between its marker comments, gated by the harness.

  readme: it passes the gate (exit 0), and a copy with the mask read one key too
          wide fails it (exit 1).
  hint:   without its `nan_isolation=False` line, masked-rows fails and the report
          names `"nan_isolation": false`; with NaN rows (no guard on an empty row's
          max) it fails naming `"masked_rows": "nan"`; an in-tree adapter's NaN leak
          (not exec:) gets no such sentence.

Usage: python_kit_readme.py readme|hint ATTNCHECK_BINARY SOURCE_DIR   (exit 77: numpy missing)"""

import glob
import json
import os
import re
import subprocess
import sys
import tempfile

MODE, BINARY, SOURCE = sys.argv[1], sys.argv[2], sys.argv[3]
try:
    import numpy  # noqa: F401
except ImportError:
    print(f"SKIP: numpy is not installed for {sys.executable} (the kit needs it)")
    sys.exit(77)

with open(os.path.join(SOURCE, "README.md")) as f:
    readme = f.read()
found = re.search(r"<!-- python-kit-example:begin -->\n```python\n(.*?)```\n<!-- python-kit-example:end -->", readme,
                  re.S)
if not found:
    print("FAIL: README.md has no ```python block between <!-- python-kit-example:begin/end --> markers")
    sys.exit(1)
EXAMPLE = found.group(1)
failures = []


def planted(old, new):
    """The example with one line changed; the line must be there verbatim."""
    if EXAMPLE.count(old) != 1:
        failures.append(f"the README example no longer has the line {old.strip()!r} once")
        return EXAMPLE
    return EXAMPLE.replace(old, new)


def gate(source, tmp, name, *args):
    """(exit status, {law: its JSON result}, the report.md texts) of a gate run on a kernel file with this source."""
    path = os.path.join(tmp, f"{name}.py")
    with open(path, "w") as f:
        f.write(source)
    reports = os.path.join(tmp, f"{name}-reports")
    env = dict(os.environ, PYTHONPATH=os.path.join(SOURCE, "python"))
    summary = os.path.join(tmp, f"{name}.json")
    command = [BINARY, "gate", "--adapter", f"exec:{sys.executable} {path}", "--seed", "3", "--report-dir", reports,
               "--no-shrink", "--json", summary, *args]
    run = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    texts = [open(p).read() for p in sorted(glob.glob(os.path.join(reports, "*", "report.md")))]
    print(f"--- {name}: exit {run.returncode}\n{run.stdout[-3000:]}{run.stderr[-2000:]}")
    results = {}
    if os.path.exists(summary):
        with open(summary) as f:
            results = {r["law"]: r for r in json.load(f)["results"]}
    return run.returncode, results, texts


def expect(condition, what):
    print(("ok: " if condition else "FAIL: ") + what)
    if not condition:
        failures.append(what)


WIDE = "    visible = (call.mask | np.roll(call.mask, 1, axis=-1))[:, None]  # [B, 1, Tq, Tk]\n"
with tempfile.TemporaryDirectory() as tmp:
    if MODE == "readme":
        status, out, _ = gate(EXAMPLE, tmp, "readme", "--cases", "150")
        expect(status == 0, "the README kernel passes the gate (exit 0)")
        expect(out.get("masked-rows", {}).get("hazards", 0) > 0 and
               sum(r["failed"] + r["errors"] for r in out.values()) == 0,
               "the gate shows the declared NaN leak as a masked-rows hazard, and no failure or error")
        wide = planted("    visible = call.mask[:, None]  # [B, 1, Tq, Tk]\n", WIDE)
        status, _, reports = gate(wide, tmp, "wide", "--cases", "150")
        expect(status == 1, "the mask read one key too wide fails the gate (exit 1)")
    elif MODE == "hint":
        sentence = "declare \"nan_isolation\": false in the hello's capabilities"
        declared = "    nan_isolation=False,  # p @ v reads every key, so 0 × NaN from an unused cache slot leaks\n"
        leak = planted(declared, "")
        status, _, reports = gate(leak, tmp, "leak", "--law", "masked-rows", "--cases", "60")
        expect(status == 1, "without nan_isolation=False the NaN leak fails masked-rows (exit 1)")
        expect(any(sentence in r and "attncheck.capabilities(nan_isolation=False)" in r for r in reports),
               "its report names \"nan_isolation\": false and attncheck.capabilities(nan_isolation=False)")
        guarded = "    p = np.exp(scores - np.where(np.isfinite(top), top, 0))  # a row with no visible key: all 0\n"
        rows = planted(guarded, "    p = np.exp(scores - top)\n")
        status, _, reports = gate(rows, tmp, "nan-rows", "--law", "masked-rows", "--cases", "60")
        expect(status == 1, "NaN rows under the default masked_rows zeros fail masked-rows (exit 1)")
        expect(any("declare \"masked_rows\": \"nan\"" in r for r in reports),
               "its report names \"masked_rows\": \"nan\"")
        env = dict(os.environ)
        run = subprocess.run([BINARY, "gate", "--adapter", "mutant:masked-value-zero-times-nan", "--law", "masked-rows",
                              "--cases", "60", "--seed", "3", "--no-shrink", "--report-dir",
                              os.path.join(tmp, "mutant-reports")], capture_output=True, text=True, env=env,
                             timeout=600)
        reports = [open(p).read() for p in glob.glob(os.path.join(tmp, "mutant-reports", "*", "report.md"))]
        expect(run.returncode == 1 and reports, "an in-tree adapter's NaN leak fails masked-rows too")
        expect(not any("hello's capabilities" in r for r in reports),
               "its report has no process-backend sentence (its contract is declared in code)")
    else:
        failures.append(f"unknown mode {MODE!r}")
if failures:
    print(f"{len(failures)} failed: " + "; ".join(failures))
sys.exit(1 if failures else 0)
