#!/usr/bin/env bash
# Builds the single-thread SIMD128 wasm package into pkg/ (ES module, --target web), only when a
# source is newer than the last build. wasm-opt comes from npm binaryen (node_modules/.bin).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/node_modules/.bin:$HOME/.cargo/bin:$PATH"
out=pkg/kopitiam_wasm_bg.wasm
if [ -f "$out" ] && [ -z "$(find src Cargo.toml Cargo.lock .cargo -newer "$out" -print -quit)" ]; then
  echo "[build] pkg/ is up to date"
  exit 0
fi
echo "[build] wasm-pack build --release --target web"
wasm-pack --quiet build --release --target web --out-dir pkg --no-pack --mode no-install
ls -l "$out"
