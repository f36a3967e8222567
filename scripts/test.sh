#!/usr/bin/env bash
# `npm test`: the whole suite, in order — lint, native tests, the same tests in headless
# Chromium (wasm32 + simd128), then the JavaScript API and demo-page tests.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/node_modules/.bin:$HOME/.cargo/bin:$PATH"
bash scripts/setup.sh
step() { printf '\n=== %s\n' "$*"; }

step "cargo fmt --check"
cargo fmt --all -- --check
step "cargo clippy (native, wasm32 and wasm32 with relaxed SIMD)"
cargo clippy -q --all-targets -- -D warnings
cargo clippy -q --all-targets --target wasm32-unknown-unknown -- -D warnings
# The relaxed-SIMD kernels (quant/kernels/relaxed.rs) compile only in that build.
CARGO_TARGET_DIR=target/relaxed \
CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUSTFLAGS="-C target-feature=+simd128,+relaxed-simd" \
  cargo clippy -q --all-targets --target wasm32-unknown-unknown -- -D warnings

step "native cargo test (test profile: opt-level 2)"
cargo test -q

step "the same tests in headless Chromium (wasm32 + simd128)"
bash scripts/wasm-test.sh

step "relaxed-SIMD build: kernel, quant and model-layout tests in headless Chromium"
CARGO_TARGET_DIR=target/relaxed \
CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUSTFLAGS="-C target-feature=+simd128,+relaxed-simd" \
  bash scripts/wasm-test.sh --test kernels --test quant --test ops --test ocr_ops --test fidelity_archs

step "threaded build (atomics; two threads of compute, startThreads(2)) in headless Chromium"
bash scripts/test-threads.sh

step "real Gemma 3 270M Q4_0 and Q4_K_M vs llama.cpp (when PyPI can be reached in time)"
if model=$(timeout 900 bash scripts/prepare-model.sh | tail -n 1) && [ -f "$model" ]; then
  cargo run -q --release --example fidelity_real -- "$model"
  # The Q4_K_M file prepare-model.sh started from (mixed Q5_0/Q8_0/Q4_K/Q6_K), against its own
  # llama.cpp reference.
  cargo run -q --release --example fidelity_real -- \
    "$(dirname "$model")/gemma-3-270m-q4_k_m.gguf" tests/fixtures/gemma-3-270m-q4_k_m
else
  echo "SKIPPED: the model packages could not be fetched from PyPI; the tiny-fixture fidelity tests ran"
fi

step "build pkg/ and run the JavaScript tests"
bash scripts/build.sh simd relaxed threads relaxed-threads ocr ocr-relaxed
node --test tests/js/
