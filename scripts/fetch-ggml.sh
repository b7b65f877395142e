#!/usr/bin/env bash
# Fetches the llama.cpp source (with ggml 0.25.1) from the npm package
# node-llama-cpp@3.22.1, which ships it as a git bundle, into third_party/llama.cpp
# (ignored by git). Idempotent: does nothing when the checkout is already there.
set -euo pipefail
cd "$(dirname "$0")/.."
dest=third_party/llama.cpp
version=3.22.1
if [ -f "$dest/ggml/CMakeLists.txt" ]; then
  echo "fetch-ggml: $dest present"
  exit 0
fi
command -v npm >/dev/null || { echo "fetch-ggml: npm not found (run scripts/install-deps.sh)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "fetch-ggml: npm pack node-llama-cpp@$version"
(cd "$work" && npm pack --silent "node-llama-cpp@$version" >/dev/null)
tar -xzf "$work"/node-llama-cpp-$version.tgz -C "$work" package/llama/gitRelease.bundle
mkdir -p third_party
rm -rf "$dest.tmp"
git clone --quiet "$work/package/llama/gitRelease.bundle" "$dest.tmp"
# The bundle lacks ggml/ggml.pc.in, which ggml's CMake configures; an empty one is enough.
[ -f "$dest.tmp/ggml/ggml.pc.in" ] || : > "$dest.tmp/ggml/ggml.pc.in"
mv "$dest.tmp" "$dest"
echo "fetch-ggml: $(git -C "$dest" describe --tags --always 2>/dev/null || echo checkout) in $dest"
