#!/usr/bin/env bash
# Replays the committed corpus (corpora/regressions) with two builds' programs and
# compares every verdict line: the same outcome, worst element, got/want, error,
# bound and max abs/rel, to the last printed digit (replay prints full precision).
#   scripts/compare-replays.sh BUILD_A BUILD_B   e.g. build build-clang
# Exit 0: identical; 1: they differ (the diff is printed); 77: BUILD_B has no program.
set -uo pipefail
cd "$(dirname "$0")/.."
a="$1/attncheck" b="$2/attncheck"
if [[ ! -x "$b" ]]; then
  echo "compare-replays: $b not built (make clang) — nothing to compare"
  exit 77
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$a" replay corpora/regressions >"$out/a.txt" 2>&1
"$b" replay corpora/regressions >"$out/b.txt" 2>&1
if ! diff -u --label "$a" --label "$b" "$out/a.txt" "$out/b.txt"; then
  echo "compare-replays: the two builds replay the corpus differently"
  exit 1
fi
echo "compare-replays: $(grep -c '^file:' "$out/a.txt") verdicts identical ($(tail -1 "$out/a.txt"))"
