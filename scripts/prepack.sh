#!/usr/bin/env bash
# `npm pack` / `npm publish` run this first: the tarball must carry all six wasm builds, which
# are not in git. Builds what is missing or stale; where the toolchain is absent it refuses with
# one message instead of packing a package whose `import "kopitiam-wasm"` would fail.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/node_modules/.bin:$HOME/.cargo/bin:$PATH"
refuse() {
  printf 'kopitiam-wasm prepack: %s\n' "$*" >&2
  exit 1
}
for tool in cargo wasm-pack wasm-bindgen wasm-opt; do
  command -v "$tool" >/dev/null 2>&1 \
    || refuse "$tool is missing, so the wasm builds (pkg*/) cannot be made; run \`npm run setup\` first (or \`npm test\`, which runs it)"
done
# Build output goes to stderr: `npm pack` prints the tarball name on stdout.
bash scripts/build.sh simd relaxed threads relaxed-threads ocr ocr-relaxed >&2
for out in pkg pkg-relaxed pkg-threads pkg-relaxed-threads pkg-ocr pkg-ocr-relaxed; do
  [ -s "$out/kopitiam_wasm_bg.wasm" ] && [ -s "$out/kopitiam_wasm.js" ] || refuse "$out/ is incomplete after the build"
done
