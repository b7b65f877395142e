#!/usr/bin/env bash
# Installs every Debian package attncheck needs. Idempotent: packages already
# present are left alone and apt-get is not called at all when nothing is missing.
#   --with-browser   also install chromium (HTML report rendering test)
#   --with-libtorch  also install libtorch-dev (libtorch adapters)
#   --with-onnxruntime  also install node and onnxruntime-node (ort-* adapters)
#   --with-python    also make the Python environment third_party/venv (the kit,
#                    numpy, torch==2.13.0 CPU, jax+jaxlib==0.10.2 CPU) for the torch-* and jax-* adapters
set -euo pipefail

packages=(cmake make g++ clang-14 libclang-rt-14-dev git ca-certificates
          libgtest-dev libgmock-dev librapidcheck-dev libeigen3-dev libfmt-dev
          nlohmann-json3-dev libcli11-dev libbenchmark-dev python3-numpy)
with_onnxruntime=0
with_python=0
for arg in "$@"; do
  case "$arg" in
    --with-browser) packages+=(chromium) ;;
    --with-libtorch) packages+=(libtorch-dev) ;;
    --with-onnxruntime) with_onnxruntime=1 ;;
    --with-python) with_python=1 ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) echo "install-deps.sh: unknown option '$arg' (try --help)" >&2; exit 2 ;;
  esac
done

missing=()
# npm (to fetch the ggml source package) may come from Debian or from another
# nodejs build; only ask Debian for it when no npm is on the PATH.
command -v npm >/dev/null 2>&1 || packages+=(npm)
if [ "$with_onnxruntime" = 1 ] && ! command -v node >/dev/null 2>&1; then packages+=(nodejs); fi
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "install-deps: all ${#packages[@]} packages present"
fi

# The ggml source for adapters/ggml (optional: the build works without it).
"$(dirname "$0")/fetch-ggml.sh" || echo "install-deps: warning: fetching ggml failed; the ggml adapters will not be built" >&2
# onnxruntime-node and onnx-proto for adapters/onnxruntime (optional: listed as unavailable without).
if [ "$with_onnxruntime" = 1 ]; then
  "$(dirname "$0")/fetch-onnxruntime.sh" || echo "install-deps: warning: fetching onnxruntime failed; the ort-* adapters will be unavailable" >&2
fi
# The Python environment of the kit's adapters (optional: listed as unavailable without).
if [ "$with_python" = 1 ]; then
  "$(dirname "$0")/make-python-env.sh" || echo "install-deps: warning: making the Python environment failed; the torch-* and jax-* adapters will be unavailable" >&2
fi
