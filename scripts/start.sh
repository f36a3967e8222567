#!/usr/bin/env bash
# `npm start`: set up what is missing, build the wasm packages, prepare the default model
# (Gemma 3 270M, requantized to Q4_0, in ~/.cache/kopitiam), serve the demo with COOP/COEP.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh simd relaxed threads relaxed-threads ocr ocr-relaxed
bash scripts/prepare-model.sh >/dev/null
exec node scripts/serve.mjs
