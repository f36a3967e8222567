#!/usr/bin/env bash
# The threaded wasm tests: build-std with atomics, `--features threads`, in headless Chromium
# (wasm-bindgen-test-runner serves COOP/COEP itself, so SharedArrayBuffer works).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/threads-env.sh
bash scripts/wasm-test.sh --features threads --test threads --test tensor_views --test quant
