#!/usr/bin/env bash
# `npm start`: set up what is missing, build the wasm package, serve the demo.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh simd relaxed threads
exec node scripts/serve.mjs
