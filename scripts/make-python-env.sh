#!/usr/bin/env bash
# Makes the Python environment of the adapters served through the Python kit
# (adapters/torch, adapters/jax, examples/process): a virtual environment in
# third_party/venv (ignored) with numpy, torch==2.13.0 (the CPU build), jax and jaxlib
# 0.10.2 (CPU; the last release for Python 3.11), transformers 5.24.0 (on that torch),
# openvino 2026.4.1, onnxruntime 1.31.1 with onnx 1.23.2 (to build its models) and the kit from ./python.
# Idempotent: a complete environment (its stamp matches this script's pins) is left
# alone. torch is installed first and pinned as a constraint for everything after
# it, so no other package can pull another torch build.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="${ATTNCHECK_VENV:-$root/third_party/venv}"
python="${PYTHON:-python3}"
TORCH_PIN="torch==2.13.0"
NUMPY_PIN="numpy>=1.24,<3"
JAX_PINS=("jax==0.10.2" "jaxlib==0.10.2")
LIBRARY_PINS=("transformers==5.24.0" "openvino==2026.4.1" "onnxruntime==1.31.1" "onnx==1.23.2")
stamp_text="torch=2.13.0 numpy jax=0.10.2 transformers=5.24.0 openvino=2026.4.1 onnxruntime=1.31.1 onnx=1.23.2 kit=editable v3"

if [ -x "$venv/bin/python" ] && [ -f "$venv/.attncheck-stamp" ] && [ "$(cat "$venv/.attncheck-stamp")" = "$stamp_text" ]; then
  echo "make-python-env: $venv is complete ($stamp_text)"
  exit 0
fi
echo "make-python-env: making $venv with $("$python" --version 2>&1)"
"$python" -m venv "$venv"
constraints="$venv/attncheck-constraints.txt"
echo "$TORCH_PIN" > "$constraints"
"$venv/bin/python" -m pip install -q --upgrade pip setuptools wheel -c "$constraints"
"$venv/bin/python" -m pip install -q "$TORCH_PIN"
"$venv/bin/python" -m pip install -q "$NUMPY_PIN" -c "$constraints"
"$venv/bin/python" -m pip install -q "${JAX_PINS[@]}" -c "$constraints"
"$venv/bin/python" -m pip install -q "${LIBRARY_PINS[@]}" -c "$constraints"
"$venv/bin/python" -m pip install -q --no-deps -e "$root/python" -c "$constraints"
"$venv/bin/python" - <<'PY'
import jax, jaxlib, numpy, onnx, onnxruntime, openvino, torch, transformers
assert torch.__version__.startswith("2.13.0"), torch.__version__
assert jax.__version__ == jaxlib.__version__ == "0.10.2", (jax.__version__, jaxlib.__version__)
assert transformers.__version__ == "5.24.0", transformers.__version__
assert onnxruntime.__version__ == "1.31.1", onnxruntime.__version__
print(f"make-python-env: torch {torch.__version__}, jax {jax.__version__}, transformers {transformers.__version__}, "
      f"openvino {openvino.__version__}, onnxruntime {onnxruntime.__version__}, numpy {numpy.__version__}")
PY
echo "$stamp_text" > "$venv/.attncheck-stamp"
