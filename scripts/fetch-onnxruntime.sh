#!/usr/bin/env bash
# Installs ONNX Runtime for Node (onnxruntime-node, pinned) and the ONNX protos
# (onnx-proto) from npm into third_party/onnxruntime (ignored by git) for the
# ort-* adapters (adapters/onnxruntime). Idempotent; prunes non-linux-x64 binaries.
set -euo pipefail
cd "$(dirname "$0")/.."
dest=third_party/onnxruntime
ort_version=1.30.0
proto_version=8.0.1
stamp="$dest/.installed-$ort_version-$proto_version"
if [ -f "$stamp" ]; then
  echo "fetch-onnxruntime: $dest present (onnxruntime-node $ort_version)"
  exit 0
fi
command -v npm >/dev/null || { echo "fetch-onnxruntime: npm not found (run scripts/install-deps.sh)" >&2; exit 1; }
mkdir -p "$dest"
cat > "$dest/package.json" <<JSON
{"name": "attncheck-onnxruntime", "private": true,
 "dependencies": {"onnxruntime-node": "$ort_version", "onnx-proto": "$proto_version"}}
JSON
echo "fetch-onnxruntime: npm install onnxruntime-node@$ort_version onnx-proto@$proto_version"
# --ignore-scripts: onnxruntime-node's install script would download GPU providers.
(cd "$dest" && ONNXRUNTIME_NODE_INSTALL=skip npm install --ignore-scripts --no-audit --no-fund --silent)
# Only linux-x64 runs here; the other platforms' binaries are ~240 MB.
bin="$dest/node_modules/onnxruntime-node/bin"
for dir in "$bin"/napi-v*/*; do
  [ -d "$dir" ] || continue
  case "$(basename "$dir")" in
    linux) for arch in "$dir"/*; do [ "$(basename "$arch")" = x64 ] || rm -rf "$arch"; done ;;
    *) rm -rf "$dir" ;;
  esac
done
touch "$stamp"
echo "fetch-onnxruntime: installed in $dest"
