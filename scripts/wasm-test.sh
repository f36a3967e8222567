#!/usr/bin/env bash
# The wasm tests in headless Chromium: `cargo test` for wasm32 with wasm-bindgen-test-runner as
# the runner (it reads ./webdriver.json for Chromium's flags), arguments passed to `cargo test`.
# `wasm-pack test` does the same after a `cargo build --tests` of every test target in the dev
# profile, whose full debuginfo made each binary 60-100 MB (3-4 GB a build configuration).
set -euo pipefail
cd "$(dirname "$0")/.."
CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER="$(command -v wasm-bindgen-test-runner)" \
CHROMEDRIVER="${CHROMEDRIVER:-$(command -v chromedriver)}" \
WASM_BINDGEN_TEST_ONLY_WEB=1 \
  exec cargo test --target wasm32-unknown-unknown "$@"
