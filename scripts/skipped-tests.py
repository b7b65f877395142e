#!/usr/bin/env python3
"""Say why each test of the last ctest run was skipped.

ctest's summary lists skipped tests by name only ("The following tests did not run");
the reason is in each test's output, which ctest prints for failures alone. This reads
BUILD/Testing/Temporary/LastTest.log and prints one line per skipped test with the
reason its output gives: a GoogleTest GTEST_SKIP message, a line starting with
"skipped:" or "skip:" (our script tests, which exit 77), else its last line.

Usage: skipped-tests.py BUILD_DIR      (after ctest --test-dir BUILD_DIR)
       skipped-tests.py --self-test    (checks the parser on a made-up log)
Exit 0 always after a run: it explains, it does not judge; 2 when BUILD_DIR is missing.
"""
import re
import sys
from pathlib import Path

TESTING = re.compile(r"^\d+/\d+ Testing: (.*)$")


def outputs(log_text):
    """Test name -> its output lines, from a LastTest.log."""
    result, name, lines, inside = {}, None, [], False
    for line in log_text.splitlines():
        m = TESTING.match(line)
        if m:
            name, lines, inside = m.group(1).strip(), [], False
            continue
        if name is None:
            continue
        if line == "Output:":
            inside = None  # the dashed rule comes next
        elif inside is None:
            inside = True
        elif inside and line == "<end of output>":
            result[name], inside = lines, False
        elif inside:
            lines.append(line)
    return result


def reason(lines):
    """The skip reason an output gives, or a note that it gives none."""
    for i, line in enumerate(lines):
        if line.endswith(": Skipped") and i + 1 < len(lines) and lines[i + 1].strip():
            return lines[i + 1].strip()
    for line in lines:
        if line.strip().lower().startswith(("skipped:", "skip:")):
            return line.strip()
    said = [line.strip() for line in lines if line.strip()]
    return said[-1] if said else "(its output gives no reason: a defect of the test)"


def skipped_names(temporary):
    """Names ctest recorded as not run (LastTestsDisabled.log: 'N:name' per line)."""
    path = temporary / "LastTestsDisabled.log"
    if not path.exists():
        return []
    return [line.split(":", 1)[1].strip() for line in path.read_text().splitlines() if ":" in line]


def report(build_dir):
    temporary = Path(build_dir) / "Testing" / "Temporary"
    log = temporary / "LastTest.log"
    if not log.exists():
        print(f"skipped-tests: {log}: no such file (run ctest first)", file=sys.stderr)
        return 2
    by_name = outputs(log.read_text(errors="replace"))
    # A name absent from this run's log is left over from an earlier run.
    names = [name for name in skipped_names(temporary) if name in by_name]
    if not names:
        return 0
    print(f"{len(names)} test(s) skipped, each with the reason its output gives:")
    for name in names:
        short = name.split("  # ")[0]
        print(f"  {short}: {reason(by_name[name])}")
    return 0


def self_test():
    log = "\n".join([
        "1/4 Testing: gpu_case",
        "1/4 Test: gpu_case",
        'Command: "/usr/bin/sh" "-c" "exit 77"',
        "Output:",
        "----------------------------------------------------------",
        "skipped: needs an NVIDIA GPU",
        "exit status 77",
        "<end of output>",
        "2/4 Testing: Suite.Case  # GetParam() = 4",
        "Output:",
        "----------------------------------------------------------",
        "[ RUN      ] Suite.Case",
        "tests/x.cc:10: Skipped",
        "none of its adapters is built here (a, b)",
        "[  SKIPPED ] Suite.Case (1 ms)",
        "<end of output>",
        "3/4 Testing: other_words",
        "Output:",
        "----------------------------------------------------------",
        "comparing the replays of two builds",
        "compare: build-clang/attncheck not built - nothing to compare",
        "<end of output>",
        "4/4 Testing: silent",
        "Output:",
        "----------------------------------------------------------",
        "<end of output>",
    ])
    got = {name: reason(lines) for name, lines in outputs(log).items()}
    want = {
        "gpu_case": "skipped: needs an NVIDIA GPU",
        "Suite.Case  # GetParam() = 4": "none of its adapters is built here (a, b)",
        "other_words": "compare: build-clang/attncheck not built - nothing to compare",
        "silent": "(its output gives no reason: a defect of the test)",
    }
    if got != want:
        print(f"skipped-tests self-test: got {got}, want {want}", file=sys.stderr)
        return 1
    print("skipped-tests self-test: 4 logs parsed as expected")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: skipped-tests.py BUILD_DIR | --self-test", file=sys.stderr)
        sys.exit(2)
    sys.exit(self_test() if sys.argv[1] == "--self-test" else report(sys.argv[1]))
