#!/bin/bash
# The torch-cuda-* check on a machine with an NVIDIA GPU and a torch built with CUDA
# (FINDINGS.md, "PyTorch on CUDA"): what each SDPA backend takes (sdpa_support.py), whether
# the fused backwards repeat bitwise (backward_determinism.py), F53's reproducer, a probe of
# each variant, then the gate of every torch-cuda-* adapter under a time budget.
#
#   ATTNCHECK=build/attncheck PYTHON=python3 RESULTS=gpu-check scripts/gpu/torch-cuda-check.sh
#
# ATTNCHECK may be a copy of the binary carried to the GPU machine: it finds the backend and
# the kit as an install does (<bin>/../share/attncheck/torch/backend.py, <bin>/../share/python),
# which this script lays out beside it when they are missing. BUDGET_S (default 300) bounds
# each of the two gates (SDPA's eight variants, FlexAttention's two, run side by side).
set -u
here=$(cd "$(dirname "$0")/../.." && pwd)
A=${ATTNCHECK:-$here/build/attncheck}
R=${RESULTS:-gpu-check}
export ATTNCHECK_TORCH_CUDA_PYTHON=${PYTHON:-$(command -v python3)} PYTHONUNBUFFERED=1
mkdir -p "$R"
share=$(dirname "$(readlink -f "$A")")/../share
if [ ! -f "$share/attncheck/torch/backend.py" ] && [ ! -f "$here/adapters/torch/backend.py" ]; then
  echo "torch-cuda-check: no adapters/torch/backend.py beside $A or in $here" >&2; exit 2
fi
if [ "$(readlink -f "$A")" != "$(readlink -f "$here/build/attncheck")" ] && [ ! -f "$share/attncheck/torch/backend.py" ]; then
  mkdir -p "$share/attncheck" && cp -r "$here/adapters/torch" "$share/attncheck/" && cp -r "$here/python" "$share/python"
fi
py=$ATTNCHECK_TORCH_CUDA_PYTHON
if ! "$py" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  echo "torch-cuda-check: $py has no torch that sees a CUDA device" >&2; exit 2
fi
t0=$(date +%s); step() { echo "[+$(( $(date +%s) - t0 ))s] $*"; }
step "support matrix, determinism, F53, probes"
"$py" "$here/scripts/gpu/sdpa_support.py" > "$R/support.txt" 2>&1 &
"$py" "$here/scripts/gpu/backward_determinism.py" > "$R/determinism.txt" 2>&1 &
"$py" "$here/findings/torch/cudnn_bool_mask_fill.py" > "$R/f53.txt" 2>&1 &
for v in $("$A" list 2>/dev/null | awk '/^  torch-cuda-/ {print $1}'); do
  timeout 180 "$A" probe -a "$v" --json "$R/probe-$v.json" > "$R/probe-$v.txt" 2>&1 &
done
wait
step "gates (budget ${BUDGET_S:-300} s each)"
"$A" gate -a 'torch-cuda-sdpa-*' -n 1000 -s 7 -j 10 -q --shrink-seconds 2 --time-budget "${BUDGET_S:-300}" \
  --report-dir "$R/report-sdpa" --json "$R/gate-sdpa.json" > "$R/gate-sdpa.txt" 2>&1 &
"$A" gate -a 'torch-cuda-flex-*' -n 1000 -s 7 -j 6 -q --shrink-seconds 2 --time-budget "${BUDGET_S:-300}" \
  --report-dir "$R/report-flex" --json "$R/gate-flex.json" > "$R/gate-flex.txt" 2>&1 &
wait
step "done: $R"
cat "$R/f53.txt" "$R/determinism.txt"
