#!/usr/bin/env bash
# Runs every libFuzzer target of a fuzz build for SECONDS each and prints one
# line per target (executions, exec/s, CPU seconds, outcome).
#   scripts/fuzz-smoke.sh BUILD_DIR [SECONDS] [TARGET…]
# BUILD_DIR is build-fuzz or build-fuzz-fast (make fuzz). Targets default to all
# (*_fuzz under BUILD_DIR/fuzz); name them without the _fuzz suffix.
# Environment:
#   ATTNCHECK_FUZZ_ADAPTER  adapter for the law targets (default eigen);
#                           mutant:auto = a mutant each law exists to catch
#   FUZZ_EMPTY=1            start from an empty corpus (no seeds)
#   FUZZ_EXPECT=crash       every law target must find a failure (planted mutants);
#                           the parser targets are skipped
#   FUZZ_ARGS               extra libFuzzer flags (e.g. "-max_len=256")
# Findings: BUILD_DIR/fuzz-findings (case files), BUILD_DIR/fuzz-artifacts (inputs).
set -euo pipefail
build=${1:?usage: fuzz-smoke.sh BUILD_DIR [SECONDS] [TARGET…]}
seconds=${2:-30}
shift $(( $# >= 2 ? 2 : 1 ))
bin=$build/fuzz
[[ -d $bin ]] || { echo "fuzz-smoke: $bin: no such folder (build with: make fuzz)" >&2; exit 2; }
seeds=$build/fuzz-seeds
if [[ ${FUZZ_EMPTY:-0} != 1 && ! -d $seeds ]]; then
  parsers=()
  for src in "$(dirname "$0")"/../fuzz/*_fuzz.cc; do parsers+=(--parser "$(basename "$src" _fuzz.cc)"); done
  "$bin/make_seeds" --out "$seeds" --corpus "$(dirname "$0")/../corpora/seeds" "${parsers[@]}"
fi
targets=("$@")
if [[ ${#targets[@]} -eq 0 ]]; then
  for f in "$bin"/*_fuzz; do targets+=("$(basename "$f" _fuzz)"); done
fi
export ATTNCHECK_FUZZ_OUT=$build/fuzz-findings
mkdir -p "$ATTNCHECK_FUZZ_OUT"
status=0
printf '%-22s %10s %8s %8s %8s  %s\n' target executions exec/s wall_s cpu_s outcome
for t in "${targets[@]}"; do
  is_law=1; [[ -e $(dirname "$0")/../fuzz/${t}_fuzz.cc ]] && is_law=0
  if [[ ${FUZZ_EXPECT:-} == crash && $is_law == 0 ]]; then continue; fi
  corpus=$build/fuzz-corpus/$t; artifacts=$build/fuzz-artifacts/$t/
  rm -rf "$corpus"; mkdir -p "$corpus" "$artifacts"
  dirs=("$corpus"); [[ ${FUZZ_EMPTY:-0} != 1 && -d $seeds/$t ]] && dirs+=("$seeds/$t")
  dict=(); [[ -f $(dirname "$0")/../fuzz/$t.dict ]] && dict=(-dict="$(dirname "$0")/../fuzz/$t.dict")
  log=$build/fuzz-logs/$t.log; mkdir -p "$(dirname "$log")"
  start=$(date +%s.%N)
  set +e
  # shellcheck disable=SC2086
  /usr/bin/time -f '%U %S' -o "$log.time" "$bin/${t}_fuzz" -max_total_time="$seconds" -print_final_stats=1 \
    -artifact_prefix="$artifacts" "${dict[@]}" ${FUZZ_ARGS:-} "${dirs[@]}" >"$log" 2>&1
  rc=$?
  set -e
  wall=$(echo "$(date +%s.%N) - $start" | bc)
  cpu=$(tail -n1 "$log.time" | awk '{print $1 + $2}' 2>/dev/null || echo '?')
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || true)
  rate=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' || true)
  if [[ -z $runs ]]; then  # a crash prints no final stats: take the last status line
    runs=$(grep -oE '^#[0-9]+' "$log" | tail -1 | tr -d '#' || true)
    rate=$(grep -oE 'exec/s: [0-9]+' "$log" | tail -1 | grep -oE '[0-9]+' || true)
  fi
  if [[ $rc == 0 ]]; then outcome=clean; else outcome="FOUND (rc $rc; $log)"; fi
  printf '%-22s %10s %8s %8.1f %8s  %s\n' "$t" "${runs:-?}" "${rate:-?}" "$wall" "$cpu" "$outcome"
  if [[ ${FUZZ_EXPECT:-} == crash ]]; then
    [[ $rc != 0 ]] || status=1
  else
    [[ $rc == 0 ]] || status=1
  fi
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
exit $status
