#!/usr/bin/env bash
# Idempotent set-up for a fresh machine of this kind (Debian, root, only the package registries
# reachable). Installs only what is missing, so a second run takes a few seconds.
#   - Debian chromium + chromium-driver (headless browser tests)
#   - rustup: wasm32 target, rust-src (threaded build), clippy, rustfmt
#   - wasm-bindgen-cli at exactly Cargo.lock's wasm-bindgen version, wasm-pack, from crates.io
#   - npm devDependencies (binaryen's wasm-opt 132, playwright-core) from package-lock.json
# Never Debian's binaryen: its wasm-opt 108 silently breaks SIMD output. Nothing downloads
# binaries from outside the registries (wasm-pack runs with --mode no-install).
set -euo pipefail
cd "$(dirname "$0")/.."
export DEBIAN_FRONTEND=noninteractive
log() { printf '[setup] %s\n' "$*"; }

if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
  log "installing chromium + chromium-driver (apt)"
  apt-get update -qq >/dev/null
  apt-get install -y -qq chromium chromium-driver >/dev/null 2>&1
fi

installed_targets=$(rustup target list --installed)
grep -qx wasm32-unknown-unknown <<<"$installed_targets" || rustup target add wasm32-unknown-unknown
installed_components=$(rustup component list --installed)
for c in rust-src clippy rustfmt; do
  grep -q "^$c" <<<"$installed_components" || rustup component add "$c" \
    || log "WARN: rustup component $c unavailable"
done

WBV=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock)
if [ "$(wasm-bindgen --version 2>/dev/null | awk '{print $2}')" != "$WBV" ]; then
  log "installing wasm-bindgen-cli $WBV (a few minutes)"
  # --locked can fail when the registry lacks one locked dependency (seen: webpki-roots 1.0.11).
  cargo install -q wasm-bindgen-cli --version "=$WBV" --locked \
    || cargo install -q wasm-bindgen-cli --version "=$WBV"
fi

WPV=0.15.1
if [ "$(wasm-pack --version 2>/dev/null | awk '{print $2}')" != "$WPV" ]; then
  log "installing wasm-pack $WPV (a few minutes)"
  cargo install -q wasm-pack --version "=$WPV" --locked || cargo install -q wasm-pack --version "=$WPV"
fi

if [ ! -x node_modules/.bin/wasm-opt ] || [ ! -f node_modules/playwright-core/package.json ] \
   || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  log "installing npm devDependencies"
  npm ci --no-audit --no-fund --loglevel=error
fi
